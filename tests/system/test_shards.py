"""Broker shards: one gateway over two real redis-servers, each with its own real prefork worker.

Large requests are split over both shards and small ones spread, on both transport paths; `/status`
and `/metrics` add the shards up and show each.  A shard's Redis killed with SIGKILL mid-load costs
only what it held: those submissions run again on the other shard at once (no wrong answer, no
waiting for the deadline), new work goes to the shard that is up, and the shard serves again once
its Redis is back.

Optional (about a minute; `make test-scale`, which .ci/run runs): set JUDGE_TEST_SCALE=1.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.helpers import gateway_status, request
from tests.support.metrics import scrape, value
from tests.support.processes.services import Service, start_gateway, start_redis, start_worker
from tests.support.processes.stack import stack_env

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not os.environ.get('JUDGE_TEST_SCALE'), reason='optional: make test-scale'),
]

START_RE = re.compile(r'start sub_id=(\S+) ')


@dataclass
class Sharded:
    url: str
    log_dir: Path
    redis: list[Service]
    ports: list[int]
    workers: list[Service]
    gateway: Service


@pytest.fixture(scope='module', params=['fast', 'stock'])
def sharded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sharded]:
    log_dir = tmp_path_factory.mktemp(f'shards-{request.param}')
    redis, ports = [], []
    for _ in range(2):
        svc, port = start_redis(log_dir)
        redis.append(svc)
        ports.append(port)
    urls = ','.join(f'redis://127.0.0.1:{p}/0' for p in ports)
    work_root = Path('/tmp') / f'judge-shards-{ports[0]}'
    env = stack_env(f'redis://127.0.0.1:{ports[0]}/0', work_root, request.param) | {'JUDGE_BROKER_SHARDS': urls}
    workers: list[Service] = []
    gateway = None
    try:
        for k in range(2):
            workers.append(start_worker(env | {'JUDGE_WORKER_SHARD': str(k)}, log_dir, f's{k}-{ports[0]}', 1))
        gateway, url = start_gateway(env, log_dir)
        yield Sharded(url, log_dir, redis, ports, workers, gateway)
    finally:
        for svc in [gateway, *workers, *redis]:
            if svc is not None:
                svc.stop()
        shutil.rmtree(work_root, ignore_errors=True)


def _subs(n: int, tag: str, sleep_s: float = 0.0) -> list[dict[str, Any]]:
    pause = f'import time\ntime.sleep({sleep_s})\n' if sleep_s else ''
    return [{'type': 'python', 'solution': f'{pause}print({i} * {i})', 'sub_id': f'{tag}-{i}'} for i in range(n)]


def _correct(results: list[dict[str, Any]]) -> bool:
    return all(r['success'] and (r['stdout'] or '').strip() == str(i * i) for i, r in enumerate(results))


def _ran(worker: Service, prefix: str) -> int:
    """Submissions whose sub_id starts with ``prefix`` that ``worker`` started."""
    return sum(1 for sub_id in START_RE.findall(worker.log()) if sub_id.startswith(prefix))


def test_requests_are_spread_and_status_and_metrics_add_the_shards_up(sharded: Sharded) -> None:
    status, body = request(sharded.url + '/run/long-batch', {'submissions': _subs(160, 'split')})
    assert status == 200 and _correct(body['results']), body
    ran = [_ran(w, 'split-') for w in sharded.workers]
    assert sum(ran) == 160 and min(ran) >= 64, ran  # one part per shard (64+ each)
    with ThreadPoolExecutor(8) as pool:  # small requests go whole, each to the less busy shard
        answers = list(
            pool.map(lambda i: request(sharded.url + '/run/batch', {'submissions': _subs(4, f'sm{i}')}), range(16))
        )
    assert all(s == 200 and _correct(b['results']) for s, b in answers), answers
    assert all(sum(_ran(w, f'sm{i}-') > 0 for w in sharded.workers) == 1 for i in range(16))
    assert min(sum(_ran(w, f'sm{i}-') for i in range(16)) for w in sharded.workers) > 0
    seen = gateway_status(sharded.url)
    assert seen['broker'] == 'ok' and seen['num_nodes'] == 2 and seen['num_workers'] == 2, seen
    assert [(s['name'], s['broker'], s['num_nodes']) for s in seen['shards']] == [('s0', 'ok', 1), ('s1', 'ok', 1)]
    assert {n['shard'] for n in seen['nodes']} == {'s0', 's1'}
    samples = scrape(sharded.url)
    assert value(samples, 'judge_broker_up') == 1
    assert [value(samples, 'judge_shard_up', shard=s) for s in ('s0', 's1')] == [1, 1]
    assert value(samples, 'judge_shard_queue_depth', shard='s1', queue='judge.long') == 0


def test_a_shard_killed_mid_load_costs_only_a_rerun_and_comes_back(sharded: Sharded) -> None:
    with ThreadPoolExecutor(6) as pool:
        futures = [
            pool.submit(request, sharded.url + '/run/long-batch', {'submissions': _subs(8, f'k{i}', 0.15)})
            for i in range(6)
        ]
        deadline = time.monotonic() + 30
        while _ran(sharded.workers[1], 'k') < 2:
            assert time.monotonic() < deadline, 'shard s1 never started work'
            time.sleep(0.02)
        sharded.redis[1].proc.kill()  # SIGKILL: its queued and running work is gone
        killed = time.monotonic()
        answers = [f.result(60) for f in futures]
    took = time.monotonic() - killed
    assert all(s == 200 for s, _ in answers), answers
    reasons = Counter(r['reason'] for _, body in answers for r in body['results'])
    assert all(_correct(body['results']) for _, body in answers), reasons  # rerun on s0: every answer right
    assert took < 30, took  # the long-batch deadline is an hour: the loss was seen, not waited out
    assert 'running its' in sharded.gateway.log(), 'the lost submissions were run again on the other shard'

    seen = gateway_status(sharded.url)
    assert seen['broker'] == 's1 unreachable' or seen['broker'].startswith('degraded'), seen
    assert seen['shards'][1]['broker'] == 'unreachable' and seen['shards'][0]['broker'] == 'ok', seen
    samples = scrape(sharded.url)
    assert (value(samples, 'judge_shard_up', shard='s0'), value(samples, 'judge_shard_up', shard='s1')) == (1, 0)
    assert value(samples, 'judge_broker_up') == 0
    start = time.monotonic()
    status, body = request(sharded.url + '/run/long-batch', {'submissions': _subs(6, 'down')}, timeout_s=60)
    assert status == 200 and _correct(body['results']), body
    assert time.monotonic() - start < 15 and _ran(sharded.workers[0], 'down-') == 6

    sharded.redis[1], _ = start_redis(sharded.log_dir, sharded.ports[1])  # back, empty
    deadline = time.monotonic() + 60
    while True:
        seen = gateway_status(sharded.url)
        line = seen.get('shards', [{}, {}])[1]
        if line.get('broker') == 'ok' and line.get('routing') == 'up' and line.get('num_nodes') == 1:
            break
        assert time.monotonic() < deadline, seen
        time.sleep(0.5)
    status, body = request(sharded.url + '/run/long-batch', {'submissions': _subs(160, 'back')}, timeout_s=120)
    assert status == 200 and _correct(body['results']), body
    assert min(_ran(w, 'back-') for w in sharded.workers) >= 64
    assert sharded.workers[1].proc.poll() is None and sharded.gateway.proc.poll() is None
