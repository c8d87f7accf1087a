"""`judge.stack.stop_all`: how `make run` stops what it started (real child processes, no services)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from judge.stack import BROKER, stop_all

CHILD = """
import signal, sys, time
name, out, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])

def on_term(*_):
    received = time.monotonic()
    time.sleep(delay)
    with open(out, 'a') as f:
        f.write(f'{name} {received} {time.monotonic()}\\n')
    sys.exit(0)

signal.signal(signal.SIGTERM, on_term if delay >= 0 else signal.SIG_IGN)
open(f'{out}.{name}', 'w').close()
while True:
    time.sleep(0.05)
"""


def _start(tmp_path: Path, name: str, delay_s: float) -> tuple[str, subprocess.Popen[bytes]]:
    out = tmp_path / 'log'
    proc = subprocess.Popen([sys.executable, '-c', CHILD, name, str(out), str(delay_s)], start_new_session=True)
    deadline = time.monotonic() + 10
    while not (tmp_path / f'log.{name}').exists():  # its handler is in place
        assert proc.poll() is None and time.monotonic() < deadline, f'{name} did not start'
        time.sleep(0.02)
    return name, proc


def test_the_broker_is_stopped_after_everything_else_has_exited(tmp_path: Path) -> None:
    procs = [_start(tmp_path, BROKER, 0), _start(tmp_path, 'worker', 0.3), _start(tmp_path, 'gateway', 0.2)]
    stop_all(procs)
    assert all(proc.poll() is not None for _, proc in procs)
    seen = {}
    for line in (tmp_path / 'log').read_text().splitlines():
        name, received, exited = line.split()
        seen[name] = (float(received), float(exited))
    assert set(seen) == {BROKER, 'worker', 'gateway'}
    redis_told = seen[BROKER][0]
    assert redis_told >= seen['worker'][1] and redis_told >= seen['gateway'][1], seen


def test_a_process_ignoring_sigterm_is_killed_after_the_timeout(tmp_path: Path) -> None:
    procs = [_start(tmp_path, BROKER, 0), _start(tmp_path, 'worker', -1)]
    started = time.monotonic()
    stop_all(procs, timeout_s=0.5)
    assert procs[1][1].returncode == -9
    assert procs[0][1].returncode == 0
    assert 0.5 <= time.monotonic() - started < 10
