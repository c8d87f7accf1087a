"""Python: a warm interpreter forked per submission, or a fresh `python3 -I file.py`.

A submission with a ``seed`` always runs in a fresh interpreter started with ``PYTHONHASHSEED``
and a start-up hook (`judge.sandbox.seedhook`) that seeds `random`, numpy and every generator a
module seeds at import: replayable, in warm and fresh mode alike, at a fresh interpreter's cost.
"""

from __future__ import annotations

import functools
from pathlib import Path

from judge.executors.base import NO_EXTRAS, Compiled, Executor, RunExtras
from judge.sandbox import seedhook
from judge.sandbox.client import ExecRequest, ExecResult
from judge.sandbox.limits import Limits

HOOK_NAME = 'sitecustomize.py'


@functools.cache
def hook_source() -> str:
    """The seeded runs' start-up hook, as written into their work dir."""
    return Path(seedhook.__file__).read_text(encoding='utf-8')


class PythonExecutor(Executor):
    """CPython 3, run like ``python3 source.py``."""

    language = 'python'
    source_name = 'source.py'
    version_argv = ('python3', '--version')
    run_argv = ('python3', '-I', '{src}')
    seeded_argv = ('python3', '-s', '{src}')
    """Seeded runs: not isolated (``-I`` would ignore ``PYTHONHASHSEED``); the environment is the sandbox's."""
    as_extra_mb = 128
    oom_markers = ('MemoryError',)

    def tool(self, name: str) -> str:
        if name == 'python3':
            return self.toolchain.python
        return super().tool(name)

    def run(
        self,
        source: str,
        compiled: Compiled | None,
        stdin: bytes,
        limits: Limits,
        seed: int | None = None,
        extras: RunExtras = NO_EXTRAS,
    ) -> ExecResult:
        """Warm unless the run is seeded, the mode is fresh or the program has arguments (a fresh ``python3 -I``)."""
        if seed is not None:
            return self._run_seeded(source, stdin, limits, seed, extras)
        if self.toolchain.python_mode != 'warm' or extras.args:
            return super().run(source, compiled, stdin, limits, extras=extras)
        request = ExecRequest(
            limits=limits,
            python_source=source,
            python_filename=self.source_name,
            stdin=stdin,
            files=dict(extras.files),
            fetch=list(extras.fetch),
        )
        return self.execute(request)

    def _run_seeded(self, source: str, stdin: bytes, limits: Limits, seed: int, extras: RunExtras) -> ExecResult:
        values = self.fields(source, limits.memory_mb)
        env = {'PYTHONHASHSEED': str(seed), 'PYTHONPATH': '.'}
        argv = self.argv(self.seeded_argv, env, values)
        return self.execute(extras.request(limits, argv, {values['src']: source, HOOK_NAME: hook_source()}, stdin))
