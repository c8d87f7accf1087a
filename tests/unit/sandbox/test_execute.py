"""How the slot server reads an execution's end (`judge.sandbox.server.execute`): the done record, wait statuses."""

from __future__ import annotations

import os
import signal

import pytest

from judge.sandbox.server.execute import _Done
from judge.sandbox.zygote.warm import DONE_RECORD


@pytest.mark.parametrize(
    ('payload', 'expected'),
    [
        (DONE_RECORD.pack(3, 0.25, 1024), (3, 0.25, 1024)),
        (b'', None),  # the program ended without a record (os._exit, exec)
        (b'junk', None),
        (DONE_RECORD.pack(0, 0.0, 0) * 2, None),  # more than one write: not ours
    ],
)
def test_a_done_record_is_believed_only_when_well_formed(
    payload: bytes, expected: tuple[int, float, int] | None
) -> None:
    read_end, write_end = os.pipe()
    if payload:
        os.write(write_end, payload)
    os.close(write_end)
    done = _Done(read_end)
    done.read()
    assert done.record == expected
    assert done.fd is None  # read once, then closed


def test_cpu_limit_counts_as_a_timeout() -> None:
    from judge.sandbox.server.execute import ExecOutcome, _decode_status

    killed_by_cpu_limit = ExecOutcome()
    _decode_status(signal.SIGXCPU, killed_by_cpu_limit)  # a wait status for "killed by SIGXCPU"
    assert killed_by_cpu_limit.timed_out and killed_by_cpu_limit.exit_code == -signal.SIGXCPU
    crashed = ExecOutcome()
    _decode_status(signal.SIGSEGV, crashed)
    assert not crashed.timed_out and crashed.exit_code == -signal.SIGSEGV
