"""Several gateway processes: one in-flight cap for all of them, and the same `/status` and `/metrics`.

Two real gateways on two ports, and one ``judge-gateway --workers 2`` on a third, all on one private
Redis that no worker consumes: what they admit stays in flight until its deadline (1 + 5 + 8 s, and
1 + 5 + 0 s behind the third port), so the cap is checked exactly.  A gateway killed with SIGKILL
gives its share back when its lease (``JUDGE_GATEWAY_LEASE_S``) ends.

Optional (about a minute; `make test-scale`, which .ci/run runs): set JUDGE_TEST_SCALE=1.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from judge.stack import free_port, gateway_command, wait_port
from tests.support.helpers import gateway_status, request, wait_for
from tests.support.metrics import scrape, total, value
from tests.support.processes.services import Service, start_redis
from tests.support.processes.stack import stack_env

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not os.environ.get('JUDGE_TEST_SCALE'), reason='optional: make test-scale'),
]

CAP = 3
LEASE_S = 2.0


@dataclass
class Gateways:
    a: str
    b: str
    b_service: Service
    one_port: str
    """``judge-gateway --workers 2``: two processes behind one port, no PROMETHEUS_MULTIPROC_DIR given."""


@pytest.fixture(scope='module')
def gateways(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateways]:
    log_dir = tmp_path_factory.mktemp('gateways')
    redis, port = start_redis(log_dir)
    work_root = Path('/tmp') / f'judge-gw-{port}'
    env = stack_env(f'redis://127.0.0.1:{port}/0', work_root) | {
        'JUDGE_MAX_IN_FLIGHT': str(CAP),
        'JUDGE_GATEWAY_LEASE_S': str(LEASE_S),
        'MAX_EXECUTION_TIME': '1',
    }
    env.pop('PROMETHEUS_MULTIPROC_DIR', None)
    services = [redis]
    urls = []
    try:
        for name, workers, wait_s in (('a', 1, '8'), ('b', 1, '8'), ('two', 2, '0')):
            gw_port = free_port()
            cmd = gateway_command(sys.executable, gw_port, workers)
            svc = Service(f'gateway-{name}-{gw_port}', cmd, env | {'MAX_QUEUE_WORK_LIFE_TIME': wait_s}, log_dir)
            services.append(svc)
            wait_port(gw_port, 30)
            urls.append(f'http://127.0.0.1:{gw_port}')
        yield Gateways(urls[0], urls[1], services[2], urls[2])
    finally:
        for svc in reversed(services):
            svc.stop()
        shutil.rmtree(work_root, ignore_errors=True)


def _batch(n: int, tag: str) -> dict[str, Any]:
    return {'submissions': [{'type': 'python', 'solution': f'print({i})', 'sub_id': f'{tag}-{i}'} for i in range(n)]}


def test_one_cap_for_two_gateway_processes_and_a_killed_ones_share_comes_back(gateways: Gateways) -> None:
    gw = gateways
    with ThreadPoolExecutor(4) as pool:
        held = [pool.submit(request, gw.a + '/run/batch', _batch(2, 'a'))]
        wait_for(lambda: gateway_status(gw.a).get('in_flight') == 2, 10, 'A holds 2')
        # Two more would make 4 > 3 however they are spread over the processes.
        status, body = request(gw.b + '/run/batch', _batch(2, 'b'))
        assert status == 429, body
        assert body['detail']['in_flight'] == 2 and body['detail']['max_in_flight'] == CAP, body
        held.append(pool.submit(request, gw.b + '/run', {'type': 'python', 'solution': 'print(1)'}))
        wait_for(lambda: gateway_status(gw.b).get('in_flight') == CAP, 10, 'B holds 1')
        status, body = request(gw.a + '/run', {'type': 'python', 'solution': 'print(2)'})
        assert status == 429 and body['detail']['in_flight'] == CAP, body

        # Every process reports the same cluster-wide figures.
        for url in (gw.a, gw.b, gw.one_port):
            seen = gateway_status(url)
            assert (seen['in_flight'], seen['max_in_flight'], seen['gateway_processes']) == (CAP, CAP, 4), seen
            samples = scrape(url)
            assert value(samples, 'judge_cluster_in_flight_submissions') == CAP
            assert value(samples, 'judge_gateway_processes') == 4

        # B dies without a word: its submission stays counted until its lease ends, then A may use it.
        gw.b_service.signal(signal.SIGKILL)
        killed_at = time.monotonic()
        status, _ = request(gw.a + '/run', {'type': 'python', 'solution': 'print(3)'}, timeout_s=30)
        if time.monotonic() - killed_at < LEASE_S * 0.8:
            assert status == 429
        wait_for(lambda: gateway_status(gw.a).get('in_flight') == 2, LEASE_S * 4, "B's share released")
        assert gateway_status(gw.a)['gateway_processes'] == 3
        held.append(pool.submit(request, gw.a + '/run', {'type': 'python', 'solution': 'print(4)'}))
        wait_for(lambda: gateway_status(gw.a).get('in_flight') == CAP, 10, 'A takes the freed place')
        # Nothing consumes this Redis: every admitted submission ends as queue_timeout at its deadline.
        answers = [f.result(60) for f in held[:1] + held[2:]]
    assert all(status == 200 for status, _ in answers), answers
    assert answers[0][1]['results'][0]['reason'] == 'queue_timeout'
    wait_for(lambda: gateway_status(gw.a).get('in_flight') == 0, 20, 'everything released')


def test_two_processes_behind_one_port_share_metrics_without_being_told(gateways: Gateways) -> None:
    """``judge-gateway --workers 2`` sets up Prometheus's multiprocess mode itself."""
    url = gateways.one_port
    n = 6

    def run(i: int) -> tuple[int, Any]:
        for _ in range(20):  # a 429 (another process's release still on its way) is retried, as clients do
            status, body = request(url + '/run', {'type': 'python', 'solution': f'print({i})'})
            if status != 429:
                return status, body
            time.sleep(0.2)
        return status, body

    with ThreadPoolExecutor(CAP) as pool:  # new connections: the kernel spreads them over both processes
        answers = list(pool.map(run, range(n)))
    assert all(status == 200 and body['reason'] == 'queue_timeout' for status, body in answers), answers
    for _ in range(4):  # whichever process answers the scrape reports both
        samples = scrape(url)
        assert total(samples, 'judge_submissions_total', route='/run') == n
        assert total(samples, 'judge_infra_failures_total', route='/run', reason='queue_timeout') == n
        assert value(samples, 'judge_in_flight_submissions') == 0.0
