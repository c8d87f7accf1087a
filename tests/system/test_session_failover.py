"""A live session survives the death of its node: the call in flight is answered by another node, which
rebuilds the session by replaying its recorded cells (with their seeds), and the trajectory goes on.

Two worker nodes on one Redis, as in tests/system/test_multinode.py; the node holding the session is
SIGKILLed (its whole process group: the Celery main process and its pool) while a cell runs on it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.helpers import request
from tests.support.processes.cluster import Cluster, two_nodes

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not os.environ.get('JUDGE_TEST_SCALE'), reason='optional: make test-scale'),
]


@pytest.fixture(scope='module')
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with two_nodes(
        tmp_path_factory.mktemp('session-failover'), 'judge-sf', {'JUDGE_SESSION_HEARTBEAT_S': '1'}
    ) as running:
        yield running


def cell(url: str, sid: str, code: str) -> dict[str, Any]:
    status, result = request(f'{url}/sessions/{sid}/cells', {'code': code}, timeout_s=180)
    assert status == 200, result
    return dict(result)


def test_a_node_killed_mid_trajectory_loses_no_call(cluster: Cluster) -> None:
    status, info = request(f'{cluster.url}/sessions', {'seed': 2024})
    assert status == 200, info
    sid, home = info['session_id'], info['node']
    drawn = cell(
        cluster.url,
        sid,
        'import random\nimport sympy as sp\nx = sp.Symbol("x")\ndrawn = [random.random() for _ in range(3)]\ndrawn',
    )
    assert cell(cluster.url, sid, 'roots = sp.solve(x**2 - 4, x)\nroots')['value'] == '[-2, 2]'
    victim = cluster.nodes[home.split('@')[0]]
    answers: list[dict[str, Any]] = []
    call = threading.Thread(
        target=lambda: answers.append(cell(cluster.url, sid, 'import time\ntime.sleep(2)\n(drawn, roots)'))
    )
    call.start()
    time.sleep(1.0)  # the cell runs on the victim now
    os.killpg(victim.proc.pid, signal.SIGKILL)
    victim.proc.wait()
    call.join(timeout=180)
    assert answers, 'the call in flight got no answer'
    answer = answers[0]
    assert answer['verdict'] == 'accepted' and answer['restored'] and answer['node'] != home, answer
    assert answer['value'] == f'({drawn["value"]}, [-2, 2])', answer
    after = cell(cluster.url, sid, 'len(drawn)')
    assert after['value'] == '3' and not after['restored'] and after['node'] == answer['node']
    status, info = request(f'{cluster.url}/sessions/{sid}')
    assert info['node'] == answer['node'] and info['live'] and info['cells'] == 4, info
