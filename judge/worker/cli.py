"""``judge-worker``: ``celery -A judge worker`` with the judge's defaults.

Every option is Celery's (``judge-worker --help``); the defaults added here are a prefork pool and
no gossip or mingle (nodes need not talk to each other), and a node name ``judge@<host>`` unless
``-n`` is given.  Concurrency, time limits and the transport path come from the settings
(``MAX_WORKERS``, ``MAX_EXECUTION_TIME``, ``JUDGE_TRANSPORT``, ...).
"""

from __future__ import annotations

import sys

DEFAULTS = ('-P', 'prefork', '--without-gossip', '--without-mingle')


def worker_argv(argv: list[str]) -> list[str]:
    """Celery's ``worker`` arguments: ours first, so that the caller's win."""
    out = ['worker', *DEFAULTS]
    if not any(a in ('-n', '--hostname') or a.startswith('--hostname=') for a in argv):
        out += ['-n', 'judge@%h']
    return out + argv


def worker(argv: list[str] | None = None) -> None:
    """Run a worker in the foreground (Celery's ``app.worker_main``)."""
    from judge.app import app

    app.worker_main(worker_argv(sys.argv[1:] if argv is None else argv))
