"""Two worker nodes on one Redis with one gateway, started on this host as two machines would run them.

The nodes run under distinct node names (``n1@host``, ``n2@host``), each with its own work root and
compile cache; they share only the Redis and the gateway.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from judge.stack import worker_command
from tests.support.processes.services import Service, start_gateway, start_redis
from tests.support.processes.stack import stack_env


@dataclass
class Cluster:
    url: str
    nodes: dict[str, Service]


@contextmanager
def two_nodes(log_dir: Path, prefix: str, node_env: dict[str, str] | None = None) -> Iterator[Cluster]:
    """Redis, nodes ``n1`` and ``n2`` (two pool processes each, ``node_env`` added to their environment)
    and a gateway; everything stopped and the work roots (``/tmp/<prefix>-<port>-*``) removed after."""
    redis, port = start_redis(log_dir)
    redis_url = f'redis://127.0.0.1:{port}/0'
    roots = [Path('/tmp') / f'{prefix}-{port}-{name}' for name in ('n1', 'n2', 'gw')]
    services: list[Service] = [redis]
    try:
        nodes: dict[str, Service] = {}
        for name, root in zip(('n1', 'n2'), roots, strict=False):
            # Started together, then awaited: half the start-up time.
            cmd = worker_command(sys.executable, 2, f'{name}@%h')
            nodes[name] = Service(f'worker-{name}', cmd, stack_env(redis_url, root) | (node_env or {}), log_dir)
            services.append(nodes[name])
        for svc in nodes.values():
            svc.wait_log('ready.', 60)
        gateway, url = start_gateway(stack_env(redis_url, roots[2]), log_dir)
        services.append(gateway)
        yield Cluster(url, nodes)
    finally:
        for svc in reversed(services):
            svc.stop()
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)
