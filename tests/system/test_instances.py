"""Several worker instances on one node, started the way deploy/worker.sh starts them.

Two instances (``judge-1@NODE``, ``judge-2@NODE``), each with its own prefork pool of two, one real
Redis, a real gateway and Flower: every answer is right, the four sandbox slots are four distinct
uids, cgroups and work dirs (as user code itself sees them), and `/status` and Flower list both.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from judge.stack import free_port, wait_port
from tests.support.helpers import post, request
from tests.support.processes.services import ROOT, Service, start_gateway, start_redis
from tests.support.processes.stack import stack_env

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not os.environ.get('JUDGE_TEST_SCALE'), reason='optional: make test-scale'),
]

WORKER_SH = ROOT / 'deploy' / 'worker.sh'
PROCESSES = 2
N_SUBS = 24

# What a submission reports about its own sandbox: uid, working directory, cgroup.
PROBE = """import os, time
time.sleep(0.2)
lines = [line.split(':', 2) for line in open('/proc/self/cgroup').read().split()]
cgroup = [path for _, ctl, path in lines if ctl in ('memory', '')][0]  # cgroup v1 memory, else v2
print({i})
print(os.getuid(), os.getcwd(), cgroup)
"""


@dataclass
class Node:
    name: str
    url: str
    flower_url: str
    worker: Service
    work_root: Path


@pytest.fixture(scope='module')
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    log_dir = tmp_path_factory.mktemp('instances')
    redis, port = start_redis(log_dir)
    work_root = Path('/tmp') / f'judge-inst-{port}'
    env = stack_env(f'redis://127.0.0.1:{port}/0', work_root) | {'JUDGE_PYTHON': sys.executable}
    name = f'inst{port}'
    services: list[Service] = [redis]
    try:
        worker = Service('worker-sh', [str(WORKER_SH), '-i', '2', '-c', str(PROCESSES), '-n', name], env, log_dir)
        services.append(worker)
        for i in (1, 2):
            worker.wait_log(f'judge-{i}@{name} ready.', 90)
        gateway, url = start_gateway(env, log_dir)
        services.append(gateway)
        flower_port = free_port()
        flower_cmd = [sys.executable, '-m', 'celery', '-A', 'judge', 'flower', '--address=127.0.0.1']
        flower_env = env | {'FLOWER_UNAUTHENTICATED_API': 'true'}
        flower = Service('flower', [*flower_cmd, f'--port={flower_port}'], flower_env, log_dir)
        services.append(flower)
        wait_port(flower_port, 30)
        yield Node(name, url, f'http://127.0.0.1:{flower_port}', worker, work_root)
    finally:
        for svc in reversed(services):
            svc.stop()
        shutil.rmtree(work_root, ignore_errors=True)


def _names(node: Node) -> set[str]:
    return {f'judge-{i}@{node.name}' for i in (1, 2)}


def test_status_lists_both_instances(node: Node) -> None:
    deadline = time.monotonic() + 20
    while True:
        status, body = request(node.url + '/status', timeout_s=10)
        assert status == 200, body
        listed = {n['name']: n for n in body.get('nodes', [])}
        if set(listed) == _names(node) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert set(listed) == _names(node), body
    assert all(n['processes'] == PROCESSES for n in listed.values()), listed
    assert body['num_workers'] == 2 * PROCESSES and body['num_nodes'] == 2, body


def test_answers_are_right_and_slots_never_shared(node: Node) -> None:
    subs = [{'type': 'python', 'solution': PROBE.format(i=i)} for i in range(N_SUBS)]
    body = post(node.url, '/run/batch', {'type': 'batch', 'submissions': subs}, timeout_s=120)
    seen: set[tuple[int, str, str]] = set()
    for i, result in enumerate(body['results']):
        assert result['success'], (i, result)
        first, probe = result['stdout'].splitlines()
        assert first == str(i), (i, result)
        uid, cwd, cgroup = probe.split(' ', 2)
        seen.add((int(uid), cwd, cgroup))

    # Slots claimed by the two instances' four pool processes, from the worker log.
    found = re.findall(r'slot (\d+) server pid \d+ \(start #1\), tier (namespaces|landlock|uid)', node.worker.log())
    slots = [int(n) for n, _ in found]
    with_cgroups = {tier for _, tier in found} <= {'namespaces', 'landlock'}  # the uid tier has none
    assert len(slots) == 2 * PROCESSES and len(set(slots)) == len(slots), node.worker.log()[-3000:]

    # One uid per slot, and each uid with one work dir and one cgroup nobody else has.
    uids = {uid for uid, _, _ in seen}
    assert len(uids) >= 3, seen  # 24 sleepers over 4 processes: (nearly) every slot ran some
    for column in (1, 2):
        if column == 2 and not with_cgroups:
            continue
        # A work dir is the slot's directory plus a fresh space per execution: compare the slot's part.
        values = {_slot_dir(row[column]) if column == 1 else row[column] for row in seen}
        assert len(values) == len(uids), f'two slots shared a work dir or a cgroup: {sorted(seen)}'
    base = min(uids) - min(slots) if uids else 0
    assert uids <= {base + s for s in slots}, (uids, slots)
    for uid, cwd, cgroup in seen:
        slot = uid - base
        assert cwd.startswith(f'{node.work_root}/slot{slot}/'), (uid, cwd, slot)
        assert cgroup.endswith(f'/slot{slot}') or not with_cgroups, (uid, cgroup, slot)


def _slot_dir(cwd: str) -> str:
    """``/root/slotN`` of a work dir ``/root/slotN/<execution space>/w``."""
    match = re.match(r'(.*/slot\d+)/', cwd)
    assert match, cwd
    return match.group(1)


def _flower_workers(node: Node) -> dict[str, Any]:
    status, workers = request(f'{node.flower_url}/api/workers?refresh=1', timeout_s=20)
    assert status == 200, workers
    assert isinstance(workers, dict), workers
    return workers


def test_flower_lists_both_instances_and_both_took_work(node: Node) -> None:
    # Sleepers: each instance holds at most its two processes' worth, so 16 need both instances.
    subs = [{'type': 'python', 'solution': f'import time\ntime.sleep(0.3)\nprint({i})'} for i in range(16)]
    body = post(node.url, '/run/batch', {'type': 'batch', 'submissions': subs}, timeout_s=120)
    assert [r['stdout'] for r in body['results']] == [f'{i}\n' for i in range(16)]
    deadline = time.monotonic() + 20
    while True:
        workers = _flower_workers(node)
        if _names(node) <= set(workers) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert _names(node) <= set(workers), list(workers)
    for name in _names(node):
        stats = workers[name].get('stats', {})
        assert stats.get('pool', {}).get('max-concurrency') == PROCESSES, (name, stats)
        assert stats.get('total', {}).get('judge.run', 0) >= 1, (name, stats.get('total'))
