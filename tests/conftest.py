"""Fixtures: a session-wide real stack (redis-server + prefork worker + uvicorn gateway).

The end-to-end modules in `BOTH_PATHS` run on the transport paths ``JUDGE_TEST_PATHS`` names
(``fast`` by default, as in `make test`; ``stock`` in `make test-stock`; ``fast,stock`` for both):
their tests are parametrized by the session fixture `transport`, so pytest runs each module's tests
on one stack per path.  Every other test runs on the fast path.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.services import RUNTIME_MODULES, Service, ensure_runtime, start_gateway, start_redis, start_worker

TIME_LIMIT_S = 4  # rStar2-Agent's MAX_EXECUTION_TIME
BOTH_PATHS = frozenset({'test_api', 'test_faults', 'test_attacks', 'test_judge_tests', 'test_tracing'})
PATHS = tuple(p.strip() for p in os.environ.get('JUDGE_TEST_PATHS', 'fast').split(',') if p.strip())
"""The paths `BOTH_PATHS` modules run on (``JUDGE_TEST_PATHS``)."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize `transport` per module: both paths for `BOTH_PATHS`, the fast path elsewhere."""
    if 'transport' in metafunc.fixturenames:
        module = metafunc.module.__name__.rsplit('.', 1)[-1]
        paths = list(PATHS) if module in BOTH_PATHS else ['fast']
        if not paths or not set(paths) <= {'fast', 'stock'}:
            raise pytest.UsageError(f'JUDGE_TEST_PATHS must name fast and/or stock, not {PATHS}')
        metafunc.parametrize('transport', paths, indirect=True, scope='session')


@pytest.fixture(scope='session')
def transport(request: pytest.FixtureRequest) -> str:
    """The transport path of the stack under test (``fast`` or ``stock``)."""
    return str(request.param)


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
            # The operator's modules: the example scorer and a misbehaving one (test_runtime, test_mathreward).
            'JUDGE_RUNTIME_MODULES': RUNTIME_MODULES,
            'JUDGE_TRANSPORT': transport,
        }
    )
    ensure_runtime(env)
    return env


@pytest.fixture(scope='session')
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp('services')


@pytest.fixture(scope='session')
def stack(log_dir: Path, transport: str) -> Iterator[Stack]:
    if not shutil.which('redis-server'):
        pytest.fail('redis-server is not installed: run `make test`, which installs it')
    with running_stack(log_dir, transport) as stack:
        yield stack


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


@pytest.fixture(scope='session')
def gateway_url(stack: Stack) -> str:
    """Base URL of the real gateway, e.g. ``http://127.0.0.1:PORT``."""
    return stack.url
