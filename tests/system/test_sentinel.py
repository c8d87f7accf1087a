"""The stack through Redis Sentinel (a real `redis-server --sentinel` in front of a real master),
and the gateway's behaviour while its Redis is away."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.stack import free_port, wait_port
from tests.support.helpers import assert_stack_judges, request
from tests.support.processes.services import Service, start_gateway, start_redis, start_worker
from tests.support.processes.stack import stack_env

pytestmark = pytest.mark.integration


@pytest.fixture(scope='module')
def sentinel_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Service]]:
    logs = tmp_path_factory.mktemp('sentinel')
    master, master_port = start_redis(logs)
    sentinel_port = free_port()
    conf = logs / 'sentinel.conf'
    conf.write_text(
        f'port {sentinel_port}\nbind 127.0.0.1\ndir {logs}\n'
        f'sentinel monitor judgemaster 127.0.0.1 {master_port} 1\n'
        'sentinel down-after-milliseconds judgemaster 5000\n'
    )
    sentinel = Service('sentinel', ['redis-server', str(conf), '--sentinel'], dict(os.environ), logs)
    wait_port(sentinel_port)
    env = stack_env(f'sentinel://127.0.0.1:{sentinel_port}/0', Path('/tmp') / f'judge-test-sentinel-{sentinel_port}')
    env['JUDGE_REDIS_SENTINEL_MASTER'] = 'judgemaster'
    worker = start_worker(env, logs, name='sentinel')
    gateway, url = start_gateway(env, logs)
    yield url, master
    gateway.stop()
    worker.stop()
    sentinel.stop()
    master.stop()


def test_judging_through_sentinel(sentinel_stack: tuple[str, Service]) -> None:
    url, _ = sentinel_stack
    assert_stack_judges(url)


def test_ping_stays_up_and_status_reports_a_missing_broker(tmp_path: Path) -> None:
    redis, port = start_redis(tmp_path)
    env = stack_env(f'redis://127.0.0.1:{port}/0', Path('/tmp') / f'judge-test-down-{port}')
    gateway, url = start_gateway(env, tmp_path)
    try:
        assert request(url + '/status')[1]['broker'] == 'ok'
        redis.stop()
        assert request(url + '/ping', timeout_s=10) == (200, 'pong')
        status, body = request(url + '/status', timeout_s=20)
        assert status == 200 and body['broker'].startswith('unreachable')
        redis, _ = start_redis(tmp_path, port)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and request(url + '/status', timeout_s=10)[1].get('broker') != 'ok':
            time.sleep(0.5)
        assert request(url + '/status')[1]['broker'] == 'ok'  # reconnected by itself
    finally:
        gateway.stop()
        redis.stop()
