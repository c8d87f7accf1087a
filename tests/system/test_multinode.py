"""Two worker nodes on one Redis: both take work, and a warm shutdown of one mid-batch loses nothing.

The nodes run on this host under distinct node names (``n1@host``, ``n2@host``), each with its own
work root and compile cache, as two machines would; they share only the Redis and the gateway.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.helpers import post, request
from tests.support.processes.cluster import Cluster, two_nodes
from tests.support.processes.services import Service

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not os.environ.get('JUDGE_TEST_SCALE'), reason='optional: make test-scale'),
]

SLEEP_S = 0.3
LONG_BATCH = 40


@pytest.fixture(scope='module')
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with two_nodes(tmp_path_factory.mktemp('multinode'), 'judge-mn') as running:
        yield running


def _sleepers(batch_id: str, n: int) -> dict[str, Any]:
    subs = [
        {'type': 'python', 'solution': f'import time\ntime.sleep({SLEEP_S})\nprint({i})', 'expected_output': str(i)}
        for i in range(n)
    ]
    return {'type': 'batch', 'sub_id': batch_id, 'submissions': subs}


def _ran(node: Service, batch_id: str) -> int:
    return node.log().count(f'batch={batch_id} ')


def _check_all_correct(body: dict[str, Any], n: int) -> None:
    results = body['results']
    assert len(results) == n
    bad = [(i, r) for i, r in enumerate(results) if not (r['success'] and r['stdout'] == f'{i}\n')]
    assert not bad, bad[:3]


def test_both_nodes_are_live_and_take_work(cluster: Cluster) -> None:
    deadline = time.monotonic() + 15
    while True:
        status, body = request(cluster.url + '/status', timeout_s=10)
        assert status == 200, body
        nodes = {n['name'].split('@', 1)[0]: n for n in body.get('nodes', [])}
        if set(nodes) == {'n1', 'n2'} or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert set(nodes) == {'n1', 'n2'}, body
    assert all(n['processes'] == 2 for n in nodes.values()), nodes
    assert body['num_workers'] == 4 and body['num_nodes'] == 2

    # Each node holds at most 2 tasks at a time (prefetch 1 per process): 8 sleepers need both.
    _check_all_correct(post(cluster.url, '/run/batch', _sleepers('mn-spread', 8), timeout_s=60), 8)
    for name, node in cluster.nodes.items():
        assert 'sub_id=' in node.log(), name
        assert _ran(node, 'mn-spread') >= 1, (name, node.log()[-2000:])


def test_warm_shutdown_of_one_node_mid_batch_loses_nothing(cluster: Cluster) -> None:
    n1, n2 = cluster.nodes['n1'], cluster.nodes['n2']
    answer: dict[str, Any] = {}

    def send() -> None:
        answer['body'] = post(cluster.url, '/run/long-batch', _sleepers('mn-long', LONG_BATCH), timeout_s=90)

    sender = threading.Thread(target=send)
    sender.start()
    deadline = time.monotonic() + 20
    while _ran(n2, 'mn-long') < 2:  # n2 is busy with the batch
        assert time.monotonic() < deadline, n2.log()[-2000:]
        time.sleep(0.05)
    n2.signal(signal.SIGTERM)  # warm shutdown: finish what runs, give back what is reserved
    n2.proc.wait(timeout=30)
    assert n2.proc.returncode == 0, n2.log()[-2000:]
    ran_on_n2 = _ran(n2, 'mn-long')
    assert ran_on_n2 < LONG_BATCH

    sender.join(60)
    assert not sender.is_alive(), 'the batch did not complete'
    _check_all_correct(answer['body'], LONG_BATCH)
    assert _ran(n1, 'mn-long') + ran_on_n2 >= LONG_BATCH
    assert _ran(n1, 'mn-long') >= LONG_BATCH - ran_on_n2
