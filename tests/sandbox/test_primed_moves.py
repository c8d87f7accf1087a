"""`Primed` (`judge.sandbox.server.sessions.primed`): its moves leave the process where it is, it stops
when asked, and it ends by itself when the process is gone."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator

import pytest

from judge.sandbox.kernel.hierarchy import detect, read_text, write_control
from judge.sandbox.server.sessions.primed import Primed
from tests.support.helpers import wait_for

HIERARCHY = detect() if os.getuid() == 0 else None
pytestmark = pytest.mark.skipif(HIERARCHY is None, reason='needs root and a pids cgroup')


@pytest.fixture
def group_dir() -> Iterator[str]:
    assert HIERARCHY is not None
    path = os.path.join(HIERARCHY.pids_root, f'judge-pytest-primed-{os.getpid()}-{time.monotonic_ns()}')
    os.mkdir(path)
    try:
        yield path
    finally:
        wait_for(lambda: not read_text(os.path.join(path, 'cgroup.procs')).split(), 5, 'the group empty')
        os.rmdir(path)


def test_moves_leave_the_process_in_its_group_and_stop_when_asked(group_dir: str) -> None:
    proc = subprocess.Popen(['sleep', '30'])
    try:
        write_control(os.path.join(group_dir, 'cgroup.procs'), str(proc.pid))
        primed = Primed(group_dir, proc.pid)
        wait_for(lambda: primed.moves >= 3, 5, 'several moves')
        primed.stop()
        primed.stop()  # idempotent
        assert not primed.active
        moves = primed.moves
        time.sleep(0.02)
        assert primed.moves == moves, 'no move after stop'
        assert read_text(os.path.join(group_dir, 'cgroup.procs')).split() == [str(proc.pid)]
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_ends_by_itself_when_the_process_is_gone(group_dir: str) -> None:
    proc = subprocess.Popen(['sleep', '30'])
    pid = proc.pid
    proc.kill()
    proc.wait()
    primed = Primed(group_dir, pid)
    wait_for(lambda: not primed.active, 5, 'the thread ended')
    assert primed.moves == 0
    primed.stop()
