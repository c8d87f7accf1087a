"""The manager spec's checks and the launch request (`judge.worker.communication`); the launcher itself
runs on the real stack in `tests.integration.doors.test_piston_communication`."""

from __future__ import annotations

from typing import Any

import pytest

from judge.contracts import MANAGER_MAX_PROCESSES
from judge.sandbox.client import ExecResult
from judge.sandbox.limits import Limits
from judge.worker.communication import (
    LAUNCHER_EXIT,
    LAUNCHER_FAILED,
    LAUNCHER_NAME,
    check_manager,
    launch_request,
    launcher_failed,
)

GOOD: dict[str, Any] = {'source': 'int main(){}', 'processes': 2, 'user_io': 'fifo_io', 'args': ['0.5']}


@pytest.mark.parametrize(
    'change',
    [
        {'processes': 0},
        {'processes': MANAGER_MAX_PROCESSES + 1},
        {'processes': True},
        {'processes': '2'},
        {'user_io': 'pipes'},
        {'args': ['a\0b']},
        {'args': ['x'] * 65},
    ],
)
def test_bad_specs_are_refused(change: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match='manager'):
        check_manager(GOOD | change)  # type: ignore[arg-type]


def test_good_spec_becomes_one_request_with_both_programs() -> None:
    check_manager(GOOD)  # type: ignore[arg-type]
    limits = Limits(time_s=1, memory_mb=64, output_bytes=1 << 20, file_bytes=1 << 20, pids=16)
    request = launch_request(GOOD, ['/bin/bash', LAUNCHER_NAME], ('/cache/user', '/cache/manager'), limits, b'3\n')  # type: ignore[arg-type]
    assert request.argv == ['/bin/bash', LAUNCHER_NAME, '2', 'fifo_io', '0.5']
    assert request.imports == {'run': '/cache/user', 'manager': '/cache/manager'}
    assert LAUNCHER_NAME in request.files and request.stdin == b'3\n' and request.limits is limits


def _result(code: int, stderr: bytes) -> ExecResult:
    return ExecResult(
        exit_code=code, signal=None, timed_out=False, output_exceeded=False, memory_exceeded=False, wall_s=0.0,
        cpu_s=0.0, max_rss_kb=0, stdout=b'', stderr=stderr, stdout_bytes=0, stderr_bytes=len(stderr),
    )  # fmt: skip


def test_only_the_launchers_own_failure_is_the_nodes() -> None:
    assert launcher_failed(_result(LAUNCHER_EXIT, LAUNCHER_FAILED.encode() + b'\n'))
    assert not launcher_failed(_result(LAUNCHER_EXIT, b'translate:wrong\n'))  # a manager that exits 125
    assert not launcher_failed(_result(1, LAUNCHER_FAILED.encode() + b'\n'))
