"""The documented multi-node recipe, run whole on one machine over loopback (`make test-deploy`).

A master (`deploy/master.sh`: Redis, a gateway of two uvicorn processes, Flower) and two worker
"nodes", each its own process group with its own env file, work root and compile cache: node A runs
`deploy/worker.sh` (the scripts recipe), node B runs the ExecStart lines of the systemd units
`judge-worker@1` and `judge-worker@2` (what `systemctl enable --now $(judge-worker --units)` starts).
Then the HumanEval-style check, and a load during which node A is SIGKILLed whole: every answer
still arrives, right, its lost tasks redelivered after the (shortened) visibility timeout.

Optional (about two minutes; not in `make test`): set JUDGE_TEST_DEPLOY=1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from judge.stack import free_port, wait_port
from tests.support.helpers import post, request
from tests.support.humaneval_style import check_records, write_jsonl
from tests.support.processes.services import ROOT, Service
from tests.support.processes.stack import TIME_LIMIT_S

pytestmark = [
    pytest.mark.deploy,
    pytest.mark.skipif(not os.environ.get('JUDGE_TEST_DEPLOY'), reason='optional: make test-deploy'),
    pytest.mark.timeout(600),
]

DEPLOY = ROOT / 'deploy'
VISIBILITY_TIMEOUT_S = 10
LOAD_BATCHES = 12
LOAD_BATCH = 20
SLEEP_S = 0.15


@dataclass
class Cluster:
    root: Path
    url: str
    flower_url: str
    redis_url: str
    master: Service
    nodes: dict[str, list[Service]] = field(default_factory=dict)


def _write_env(path: Path, values: dict[str, str]) -> Path:
    path.write_text(''.join(f'{k}={v}\n' for k, v in values.items()))
    return path


def _base_env() -> dict[str, str]:
    """Only what a login shell has: everything else comes from each part's env file."""
    keep = ('PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR')
    return {k: v for k, v in os.environ.items() if k in keep}


def _with_env_file(env_file: Path, argv: list[str]) -> list[str]:
    """The README's way of starting a script with an env file: `set -a; . FILE; set +a; exec ...`."""
    return ['bash', '-c', 'set -a; . "$0"; set +a; exec "$@"', str(env_file), *argv]


def _unit_command(unit: Path, instance: int, env_file: Path) -> tuple[list[str], dict[str, str]]:
    """A systemd unit's ExecStart and environment, as systemd would run instance ``instance``.

    /opt/judge/bin and /etc/judge map to this checkout (the venv's python, deploy/worker.sh as
    judge-worker, ``env_file`` as judge.env).
    """
    text = re.sub(r'\\\n\s*', ' ', unit.read_text())
    env = _base_env()
    argv: list[str] = []
    for line in text.splitlines():
        key, _, value = line.partition('=')
        value = value.replace('%i', str(instance)).replace('%%', '%')
        if key == 'Environment':
            env.update(pair.split('=', 1) for pair in value.split())
        elif key == 'EnvironmentFile':
            path = Path(value.lstrip('-').replace('/etc/judge/judge.env', str(env_file)))
            if path.exists():
                env.update(kv.split('=', 1) for kv in path.read_text().splitlines() if '=' in kv)
        elif key == 'ExecStart':
            argv = value.split()
    venv_bin = str(Path(sys.executable).parent)
    env = {k: v.replace('/opt/judge/bin/python', sys.executable) for k, v in env.items()}
    argv = [a.replace('/opt/judge/bin/judge-worker', str(DEPLOY / 'worker.sh')) for a in argv]
    return [a.replace('/opt/judge/bin', venv_bin) for a in argv], env


@pytest.fixture(scope='module')
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if os.geteuid() != 0:
        pytest.skip('the recipe runs workers as root (the sandbox drops to per-slot uids)')
    log_dir = tmp_path_factory.mktemp('deploy-cluster')
    redis_port, gateway_port, flower_port = free_port(), free_port(), free_port()
    root = Path(f'{os.environ.get("JUDGE_TEST_DEPLOY_ROOT", "/tmp/judge-deploy")}-{redis_port}')
    root.mkdir(parents=True)
    redis_url = f'redis://127.0.0.1:{redis_port}/0'
    shared = {'MAX_EXECUTION_TIME': str(TIME_LIMIT_S), 'JUDGE_VISIBILITY_TIMEOUT_S': str(VISIBILITY_TIMEOUT_S)}
    master_env = _write_env(
        root / 'master.env',
        shared
        | {
            'JUDGE_PYTHON': sys.executable,
            'JUDGE_REDIS_HOST': '127.0.0.1',
            'JUDGE_REDIS_PORT': str(redis_port),
            'JUDGE_GATEWAY_HOST': '127.0.0.1',
            'JUDGE_GATEWAY_PORT': str(gateway_port),
            'JUDGE_FLOWER_HOST': '127.0.0.1',
            'JUDGE_FLOWER_PORT': str(flower_port),
            'GATEWAY_WORKERS': '2',
            'FLOWER_UNAUTHENTICATED_API': 'true',
            'PROMETHEUS_MULTIPROC_DIR': str(root / 'metrics'),
        },
    )
    (root / 'metrics').mkdir()
    services: list[Service] = []
    try:
        master = Service('master', _with_env_file(master_env, [str(DEPLOY / 'master.sh')]), _base_env(), log_dir)
        services.append(master)
        wait_port(gateway_port, 90)
        url, flower_url = f'http://127.0.0.1:{gateway_port}', f'http://127.0.0.1:{flower_port}'
        cluster = Cluster(root, url, flower_url, redis_url, master)
        for name in ('node-a', 'node-b'):
            env_file = _write_env(
                root / f'{name}.env',
                shared
                | {
                    'REDIS_URI': redis_url,
                    'JUDGE_NODE_NAME': name,
                    'JUDGE_WORKER_INSTANCES': '2',
                    'MAX_WORKERS': '1',
                    'JUDGE_WORK_ROOT': str(root / name / 'work'),
                    'JUDGE_CACHE_DIR': str(root / name / 'cache'),
                    'JUDGE_LOG_SUBMISSIONS': '1',
                },
            )
            if name == 'node-a':  # the scripts recipe: one process group for the node
                cmd = _with_env_file(env_file, [str(DEPLOY / 'worker.sh')])
                env = _base_env() | {'JUDGE_PYTHON': sys.executable}
                cluster.nodes[name] = [Service(name, cmd, env, log_dir)]
            else:  # the systemd recipe: one unit (process group) per instance
                unit = DEPLOY / 'systemd' / 'judge-worker@.service'
                units = [(f'{name}-{i}', *_unit_command(unit, i, env_file)) for i in (1, 2)]
                cluster.nodes[name] = [Service(n, cmd, env, log_dir) for n, cmd, env in units]
            services += cluster.nodes[name]
        for name, parts in cluster.nodes.items():
            for i in (1, 2):
                svc = parts[0] if len(parts) == 1 else parts[i - 1]
                svc.wait_log(f'judge-{i}@{name} ready.', 120)
        yield cluster
    finally:
        for svc in reversed(services):
            svc.stop()
        shutil.rmtree(root, ignore_errors=True)


NODE_NAMES = {f'judge-{i}@{n}' for i in (1, 2) for n in ('node-a', 'node-b')}


def test_master_and_two_nodes_are_separate_and_all_listed(cluster: Cluster) -> None:
    groups = {svc.name: os.getpgid(svc.proc.pid) for parts in cluster.nodes.values() for svc in parts}
    groups['master'] = os.getpgid(cluster.master.proc.pid)
    assert len(set(groups.values())) == len(groups), groups
    deadline = time.monotonic() + 30
    while True:
        status, body = request(cluster.url + '/status', timeout_s=10)
        listed = {n['name'] for n in body.get('nodes', [])} if status == 200 else set()
        if listed == NODE_NAMES or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert listed == NODE_NAMES, body
    assert body['num_workers'] == 4 and body['broker'] == 'ok', body
    deadline = time.monotonic() + 30
    while True:
        status, workers = request(f'{cluster.flower_url}/api/workers?refresh=1', timeout_s=30)
        if (status == 200 and NODE_NAMES <= set(workers)) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert status == 200 and NODE_NAMES <= set(workers), (status, workers)
    for svc in (cluster.master, *cluster.nodes['node-a']):
        assert svc.proc.poll() is None, svc.log()[-2000:]


def test_humaneval_style_check_through_the_cluster(cluster: Cluster) -> None:
    src, out = cluster.root / 'humaneval.jsonl', cluster.root / 'humaneval-out.jsonl'
    rows = write_jsonl(src)
    cmd = [sys.executable, '-m', 'toolkit.evaluate', str(src), '-o', str(out), '--url', cluster.url]
    run = subprocess.run(
        [*cmd, '--batch-size', '6', '--concurrency', '4', '--json', '--no-progress'],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, (run.stdout, run.stderr)
    summary = json.loads(run.stdout)
    assert summary['total'] == len(rows) and summary['infra_failures'] == 0, summary
    check_records([json.loads(line) for line in out.read_text().splitlines()], rows)
    langs = {row['type'] for row in rows}
    assert {'python', 'cpp', 'java', 'go', 'rust', 'javascript', 'bash'} <= langs


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path('/proc').iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / 'stat').read_text().rsplit(')', 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        out.add(p)
        todo += children.get(p, [])
    return out


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
        except OSError:
            continue
        if state != 'Z':
            alive.add(pid)
    return alive


def test_sigkill_of_a_node_mid_load_loses_nothing(cluster: Cluster) -> None:
    (node_a,) = cluster.nodes['node-a']
    answers: dict[int, Any] = {}
    done_at: dict[int, float] = {}

    def send(b: int) -> None:
        subs = [
            {
                'type': 'python',
                'sub_id': f'load-{b}-{i}',
                'solution': f'import time\ntime.sleep({SLEEP_S})\nprint({b} * 1000 + {i})',
            }
            for i in range(LOAD_BATCH)
        ]
        body = {'type': 'batch', 'submissions': subs}
        answers[b] = post(cluster.url, '/run/long-batch', body, timeout_s=300)
        done_at[b] = time.monotonic()

    senders = [threading.Thread(target=send, args=(b,)) for b in range(LOAD_BATCHES)]
    for t in senders:
        t.start()
    deadline = time.monotonic() + 60
    while node_a.log().count('start sub_id=load-') < 6:  # node A is busy with the load
        assert time.monotonic() < deadline, node_a.log()[-2000:]
        time.sleep(0.05)
    pids = _descendants(node_a.proc.pid)
    assert len(pids) >= 5, pids  # worker.sh, two instances, their pool processes, slot servers
    os.killpg(os.getpgid(node_a.proc.pid), signal.SIGKILL)
    killed_at = time.monotonic()
    node_a.proc.wait(timeout=10)
    deadline = time.monotonic() + 15
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(pids), f'processes of the killed node still run: {_alive(pids)}'
    log = node_a.log()
    in_flight = log.count('start sub_id=load-') - len(re.findall(r'] sub_id=load-\S+ batch=\S+ type=', log))
    assert in_flight >= 1, log[-3000:]  # tasks the node took and never answered

    for t in senders:
        t.join(240)
    assert not any(t.is_alive() for t in senders), 'some batches never completed'
    for b in range(LOAD_BATCHES):
        got = [(r['verdict'], r['stdout']) for r in answers[b]['results']]
        assert got == [('accepted', f'{b * 1000 + i}\n') for i in range(LOAD_BATCH)], (b, got)
    # The node's unanswered tasks came back only after the visibility timeout.
    last_s = max(done_at.values()) - killed_at
    assert last_s >= VISIBILITY_TIMEOUT_S - 2 * SLEEP_S * LOAD_BATCH, last_s
    survivors = {name for name in NODE_NAMES if name.endswith('@node-b')}
    status, body = request(cluster.url + '/status', timeout_s=10)
    assert status == 200 and body['queue'] == 0, body
    assert survivors <= {n['name'] for n in body['nodes']}, body
    print(f'node A killed with {in_flight} submission(s) in flight; last answer {last_s:.1f} s after the kill')
