"""Bash: the script runs with ``bash source.sh`` (coreutils on the sandbox's PATH)."""

from __future__ import annotations

from judge.executors.base import Executor


class BashExecutor(Executor):
    """GNU bash, non-interactive, no profile or rc files."""

    language = 'bash'
    source_name = 'source.sh'
    version_argv = ('bash', '--version')
    run_argv = ('bash', '--noprofile', '--norc', '{src}')
