"""The slot server stays lean (no `logging`, `threading` or `dataclasses`); its lazy logger works without them."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT


def test_slot_server_stays_lean() -> None:
    """The slot server's zygote forks per execution: `threading` (pulled in by `logging`) runs an at-fork
    handler in every child, doubling the fork's cost, so the server must not import either; nor
    `dataclasses`, whose `inspect` and `ast` make every fork and exit ~7% dearer."""
    banned = ('logging', 'threading', 'platform', 'random', 'dataclasses', 'inspect')
    code = (
        'import sys; sys.path.insert(0, sys.argv[1]); import judge.sandbox.server.main; '
        f'print(sorted(m for m in {banned!r} if m in sys.modules))'
    )
    out = subprocess.run([sys.executable, '-I', '-c', code, str(ROOT)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == '[]', out.stdout


def test_lazy_logger_reports_warnings_in_a_process_without_logging() -> None:
    code = (
        'import sys; sys.path.insert(0, sys.argv[1]); from judge.sandbox.lazylog import get_logger; '
        "log = get_logger('judge.sandbox.x'); log.debug('quiet %d', 1); log.info('quiet'); "
        "assert 'logging' not in sys.modules; log.warning('loud %d', 2)"
    )
    out = subprocess.run([sys.executable, '-I', '-c', code, str(ROOT)], capture_output=True, text=True, check=True)
    assert out.stderr == 'judge.sandbox.x: loud 2\n'
