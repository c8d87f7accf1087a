"""Process names (``/proc/self/comm``, what ``ps``, ``top`` and `toolkit.bench.cpu` show) for the judge's own
processes: ``judge-gateway``, ``judge-consumer`` (a worker instance's main process), ``judge-pool``
(its pool processes).  Command lines stay as they were."""

from __future__ import annotations

GATEWAY = 'judge-gateway'
CONSUMER = 'judge-consumer'
POOL = 'judge-pool'


def name_process(name: str) -> None:
    """Name this process (at most 15 bytes are kept); a no-op where ``/proc`` is not writable."""
    try:
        with open('/proc/self/comm', 'w') as comm:
            comm.write(name[:15])
    except OSError:
        pass
