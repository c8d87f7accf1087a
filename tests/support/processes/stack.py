"""A whole stack on this machine: a private redis-server, a prefork worker and the gateway.

`running_stack` starts one (the session's, in ``tests/conftest.py``, or a module's own); `stack_env`
is the environment the worker and gateway of every test stack share.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes.services import (
    RUNTIME_MODULES,
    Service,
    ensure_runtime,
    start_gateway,
    start_redis,
    start_worker,
)

TIME_LIMIT_S = 4  # rStar2-Agent's MAX_EXECUTION_TIME


@dataclass
class Stack:
    """The running services and their settings."""

    redis_url: str
    env: dict[str, str]
    log_dir: Path
    redis: Service
    worker: Service
    gateway: Service
    url: str


def stack_env(redis_url: str, work_root: Path, transport: str = 'fast') -> dict[str, str]:
    """Environment shared by worker and gateway in tests."""
    env = dict(os.environ)
    env.update(
        {
            'REDIS_URI': redis_url,
            'MAX_EXECUTION_TIME': str(TIME_LIMIT_S),
            'MAX_WORKERS': '2',
            'JUDGE_WORK_ROOT': str(work_root),
            'JUDGE_CACHE_DIR': str(work_root / 'cache'),
            'JUDGE_LOG_SUBMISSIONS': '1',  # the fault and tracing tests read the per-submission lines
            # The operator's modules: the example scorer and a misbehaving one (the runtime and math
            # reward tests).
            'JUDGE_RUNTIME_MODULES': RUNTIME_MODULES,
            'JUDGE_TRANSPORT': transport,
        }
    )
    ensure_runtime(env)
    return env


@contextlib.contextmanager
def running_stack(
    log_dir: Path,
    transport: str = 'fast',
    tag: str = 'test',
    overrides: dict[str, str] | None = None,
    worker_name: str = 'w1',
) -> Iterator[Stack]:
    """A private redis-server, a prefork worker and the gateway (`stack_env` plus ``overrides``),
    stopped on exit; the work root is ``/tmp/judge-<tag>-<redis port>``."""
    redis, port = start_redis(log_dir)
    redis_url = f'redis://127.0.0.1:{port}/0'
    env = stack_env(redis_url, Path('/tmp') / f'judge-{tag}-{port}', transport)
    env.update(overrides or {})
    worker = start_worker(env, log_dir, name=worker_name)
    gateway, url = start_gateway(env, log_dir)
    try:
        yield Stack(redis_url, env, log_dir, redis, worker, gateway, url)
    finally:
        gateway.stop()
        worker.stop()
        redis.stop()
