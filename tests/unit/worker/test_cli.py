"""`judge-worker` (`judge.worker.cli`): Celery's worker command line with the judge's defaults."""

from __future__ import annotations

from judge.worker.cli import worker_argv


def test_worker_command_defaults() -> None:
    assert worker_argv([]) == ['worker', '-P', 'prefork', '--without-gossip', '--without-mingle', '-n', 'judge@%h']
    assert worker_argv(['-n', 'a@%h', '-c', '4'])[-4:] == ['-n', 'a@%h', '-c', '4']
    assert worker_argv(['--hostname=x@%h']).count('-n') == 0
