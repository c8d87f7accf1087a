"""Static checks of deploy/'s scripts, systemd units, Dockerfile and README.

No Docker and no services: these read files, run `bash -n` and the scripts' own --help, --plan,
--units and --names (which start nothing), and systemd-analyze when it is installed."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from api.cli import parse_args as parse_gateway_args
from judge.sandbox.slots import LOCK_DIR
from judge.stack import gateway_command, worker_command
from tests.support.paths import ROOT

DEPLOY = ROOT / 'deploy'


COMPOSE = DEPLOY / 'compose.yaml'


ENV_EXAMPLE = DEPLOY / 'judge.env.example'


SCRIPTS = [DEPLOY / 'master.sh', DEPLOY / 'worker.sh']


UNITS = DEPLOY / 'systemd'


def _unit(path: Path) -> dict[str, list[str]]:
    """key -> values of a systemd unit, continuation lines joined, comments dropped."""
    joined = re.sub(r'\\\n\s*', ' ', path.read_text())
    keys: dict[str, list[str]] = {}
    for line in joined.splitlines():
        if not line.strip() or line.lstrip().startswith(('#', ';', '[')):
            continue
        key, _, value = line.partition('=')
        keys.setdefault(key.strip(), []).append(value.strip())
    return keys


def _worker_flags() -> list[str]:
    """Flags every worker command line shares with judge/stack.py's `worker_command`."""
    cmd = worker_command('python')
    return ['-A judge worker', '-P prefork', *(arg for arg in cmd if arg.startswith('--'))]


# --- scripts -----------------------------------------------------------------------------------


@pytest.mark.parametrize('script', SCRIPTS, ids=lambda p: p.name)
def test_shell_script_syntax_and_usage(script: Path) -> None:
    text = script.read_text()
    assert text.startswith('#!/usr/bin/env bash\n')
    assert 'set -euo pipefail' in text
    assert script.stat().st_mode & stat.S_IXUSR, f'{script.name} is not executable'
    assert subprocess.run(['bash', '-n', str(script)], capture_output=True, timeout=10).returncode == 0
    shown = subprocess.run([str(script), '--help'], capture_output=True, text=True, timeout=10)
    assert shown.returncode == 0 and shown.stdout.startswith(f'usage: deploy/{script.name}'), shown
    wrong = subprocess.run([str(script), '--no-such-flag'], capture_output=True, text=True, timeout=10)
    assert wrong.returncode == 2 and 'unknown argument' in wrong.stderr, wrong


def test_master_script_runs_redis_and_uvicorn_workers() -> None:
    text = (DEPLOY / 'master.sh').read_text()
    assert '"$python" -m api --host "$host" --port "$port" --workers "$workers"' in text
    assert 'if [ -z "${REDIS_URI:-}" ] && [ -z "${JUDGE_BROKER_SHARDS:-}" ]' in text and 'redis-server' in text
    assert 'JUDGE_WORKER_SHARD=$k "$python" -m celery -A judge flower' in text, 'one Flower per shard'
    run = subprocess.run([str(DEPLOY / 'master.sh'), '-s', '0'], capture_output=True, text=True, timeout=10)
    assert run.returncode == 2 and '-s takes' in run.stderr, run


def test_worker_script_needs_redis_uri_and_names_instances() -> None:
    text = (DEPLOY / 'worker.sh').read_text()
    for flag in _worker_flags():
        assert flag in text, flag
    assert '-n "judge-$i@$node"' in text and '-n "judge-$only@$node"' in text
    assert '-c "${sizes[$i - 1]}"' in text and '-c "$MAX_WORKERS"' in text
    assert '"$python" -m judge.runtime.build' in text, 'the node builds (or finds) its submission runtime'
    env = {k: v for k, v in os.environ.items() if k != 'REDIS_URI'}
    run = subprocess.run([str(DEPLOY / 'worker.sh')], capture_output=True, text=True, timeout=10, env=env)
    assert run.returncode == 2 and 'REDIS_URI' in run.stderr, run


def _worker_sh(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(('JUDGE_', 'MAX_WORKERS'))}
    cmd = [str(DEPLOY / 'worker.sh'), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=10, env=clean | env)


@pytest.mark.parametrize(
    ('cores', 'args', 'plan'),
    [
        ('1', [], 'cores=1 instances=1 processes=1'),
        ('2', [], 'cores=2 instances=1 processes=2'),
        ('4', [], 'cores=4 instances=1 processes=4'),
        ('5', [], 'cores=5 instances=2 processes=3,2'),
        ('64', [], 'cores=64 instances=16 processes=' + ','.join(['4'] * 16)),
        ('64', ['-c', '16'], 'cores=64 instances=4 processes=16,16,16,16'),
        ('64', ['-i', '3'], 'cores=64 instances=3 processes=22,21,21'),
        ('8', ['-i', '2', '-c', '1'], 'cores=8 instances=2 processes=1,1'),
    ],
)
def test_worker_script_plans_one_instance_per_four_processes(cores: str, args: list[str], plan: str) -> None:
    run = _worker_sh('--plan', *args, JUDGE_NODE_CORES=cores)
    assert run.returncode == 0 and run.stdout.strip() == plan, run


def test_worker_script_spreads_instances_over_broker_shards() -> None:
    two = 'redis://10.0.0.1:6379/0, redis://10.0.0.1:6380/0'
    # A small node still serves every shard; a big one alternates them.
    assert _worker_sh('--plan', JUDGE_NODE_CORES='2', JUDGE_BROKER_SHARDS=two).stdout.strip() == (
        'cores=2 instances=2 processes=1,1 shards=0,1'
    )
    assert _worker_sh('--plan', JUDGE_NODE_CORES='16', JUDGE_BROKER_SHARDS=two).stdout.strip() == (
        'cores=16 instances=4 processes=4,4,4,4 shards=0,1,0,1'
    )
    three = 'redis://a:1/0,redis://b:2/0,redis://c:3/0'
    assert _worker_sh('--plan', '-i', '4', JUDGE_NODE_CORES='8', JUDGE_BROKER_SHARDS=three).stdout.strip() == (
        'cores=8 instances=4 processes=2,2,2,2 shards=0,1,2,0'
    )
    # Pinned: every instance on one shard, and the auto rule no longer adds instances.
    pinned = _worker_sh('--plan', JUDGE_NODE_CORES='2', JUDGE_BROKER_SHARDS=two, JUDGE_WORKER_SHARD='1')
    assert pinned.stdout.strip() == 'cores=2 instances=1 processes=2 shards=1', pinned
    for bad in ('2', 'x'):
        run = _worker_sh('--plan', JUDGE_BROKER_SHARDS=two, JUDGE_WORKER_SHARD=bad)
        assert run.returncode == 2 and 'JUDGE_WORKER_SHARD' in run.stderr, run
    text = (DEPLOY / 'worker.sh').read_text()
    assert 'JUDGE_WORKER_SHARD=${shards[$i - 1]}' in text and 'JUDGE_WORKER_SHARD=${shards[$only - 1]}' in text


def test_worker_script_plan_settings_units_and_names() -> None:
    assert _worker_sh('--plan', JUDGE_NODE_CORES='64', JUDGE_PROCESSES_PER_INSTANCE='8').stdout.strip() == (
        'cores=64 instances=8 processes=8,8,8,8,8,8,8,8'
    )
    assert _worker_sh('--plan', JUDGE_NODE_CORES='64', JUDGE_WORKER_INSTANCES='2', MAX_WORKERS='3').stdout.strip() == (
        'cores=64 instances=2 processes=3,3'
    )
    default = _worker_sh('--plan').stdout.split()[0]
    assert default.startswith('cores=') and int(default.split('=')[1]) <= (os.cpu_count() or 1)
    units = _worker_sh('--units', JUDGE_NODE_CORES='9').stdout.split()
    assert units == ['judge-worker@1.service', 'judge-worker@2.service', 'judge-worker@3.service']
    assert _worker_sh('--names', '-i', '2', '-n', 'gpu7').stdout.strip() == 'judge-1@gpu7,judge-2@gpu7'
    for bad in (['-i', '0'], ['-i', 'x'], ['-c', '-1'], ['--instance', 'a']):
        run = _worker_sh('--plan', *bad)
        assert run.returncode == 2, (bad, run)
    outside = _worker_sh('--instance', '3', '-i', '2', REDIS_URI='redis://127.0.0.1:1/0', JUDGE_PYTHON=sys.executable)
    assert outside.returncode == 2 and 'outside the plan' in outside.stderr, outside


# --- systemd -----------------------------------------------------------------------------------


def test_systemd_units() -> None:
    names = sorted(p.name for p in UNITS.iterdir())
    assert names == ['judge-flower.service', 'judge-gateway.service', 'judge-worker@.service']
    units = {name: _unit(UNITS / name) for name in names}
    for name, keys in units.items():
        assert keys['EnvironmentFile'][0] == '/etc/judge/judge.env', name
        assert len(keys['ExecStart']) == 1, name
        assert keys['WantedBy'] == ['multi-user.target'], name
        # systemd expands a bare %h to the home directory: Celery's %h must be written %%h.
        assert not re.search(r'(?<!%)%h', keys['ExecStart'][0]), name

    gateway = units['judge-gateway.service']['ExecStart'][0]
    assert gateway.startswith('/opt/judge/bin/judge-gateway ')
    assert '--workers ${GATEWAY_WORKERS}' in gateway
    unit_args = gateway.replace('${JUDGE_GATEWAY_HOST}', '0.0.0.0').replace('${JUDGE_GATEWAY_PORT}', '8088')
    parsed = parse_gateway_args(unit_args.replace('${GATEWAY_WORKERS}', '4').split()[1:])
    assert (parsed.host, parsed.port, parsed.workers) == ('0.0.0.0', 8088, 4)
    assert gateway_command('python', 1)[1:3] == ['-m', 'api'], 'the tests run the same command (judge-gateway)'
    assert 'PrivateTmp' in units['judge-gateway.service'], 'its metrics directory goes under a private /tmp'

    worker = units['judge-worker@.service']
    # deploy/worker.sh installed as judge-worker runs instance %i of the node's plan.
    assert worker['ExecStart'] == ['/opt/judge/bin/judge-worker --instance %i']
    assert 'JUDGE_PYTHON=/opt/judge/bin/python' in worker['Environment']
    assert worker['User'] == ['root']
    assert LOCK_DIR.startswith('/tmp/')
    assert 'PrivateTmp' not in worker, f'instances number their slots through a shared {LOCK_DIR}'
    assert worker['KillMode'] == ['mixed']

    flower = units['judge-flower.service']
    assert flower['ExecStart'][0].startswith('/opt/judge/bin/celery -A judge flower ')
    for name in ('judge-gateway.service', 'judge-flower.service'):
        assert units[name]['DynamicUser'] == ['yes'], f'{name} runs no user code and needs no root'


def test_systemd_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    """systemd's own checker on the units, with /opt/judge and /etc/judge pointed at this checkout."""
    analyze = shutil.which('systemd-analyze')
    if analyze is None:
        pytest.skip('systemd-analyze is not installed (Debian package systemd)')
    venv_bin = Path(sys.executable).parent
    (tmp_path / 'judge.env').write_text('REDIS_URI=redis://127.0.0.1:6379/0\n')
    for unit in UNITS.iterdir():
        text = unit.read_text().replace('/opt/judge/bin/judge-worker', str(DEPLOY / 'worker.sh'))
        text = text.replace('/opt/judge/bin/', f'{venv_bin}/').replace('/etc/judge/', f'{tmp_path}/')
        (tmp_path / unit.name.replace('@.', '@1.')).write_text(text)  # the template as instance 1
    units = sorted(str(p) for p in tmp_path.glob('*.service'))
    run = subprocess.run([analyze, 'verify', *units], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    ours = [line for line in run.stderr.splitlines() if 'judge-' in line]
    assert not ours, ours


# --- Dockerfile and README ---------------------------------------------------------------------


def test_dockerfile() -> None:
    text = (DEPLOY / 'Dockerfile').read_text()
    instructions = re.findall(r'^([A-Z]+) (.*)$', text, re.M)
    # No registry: the base is deploy/base-image.sh's debootstrapped Debian, imported locally.
    assert instructions[:2] == [('ARG', 'BASE_IMAGE=judge-debian:bookworm'), ('FROM', '${BASE_IMAGE}')]
    assert [op for op, _ in instructions].count('FROM') == 1
    assert 'deploy/base-image.sh --import judge-debian:bookworm' in text
    packages = r'apt-get install -y --no-install-recommends \\\n\s+ca-certificates python3 python3-venv g\+\+'
    assert re.search(packages, text)
    copies = [args.split() for op, args in instructions if op == 'COPY']
    assert ['deploy/worker.sh', '/opt/judge/bin/judge-worker'] in copies
    sources = [parts[0] for parts in copies]
    assert sources[0] == 'pyproject.toml', 'dependencies must be installed before the code is copied'
    for src in sources:
        assert (ROOT / src).exists(), f'COPY {src}: no such path in the repository (build context = root)'
    project = tomllib.loads((ROOT / 'pyproject.toml').read_text())['tool']['setuptools']
    packages = {p.rstrip('*') for p in project['packages']['find']['include']}
    modules = {f'{m}.py' for m in project['py-modules']}
    assert packages | modules <= set(sources), f'the image misses {packages | modules - set(sources)}'
    assert 'JUDGE_PYTHON=/opt/judge/bin/python' in text
    assert 'PYTHON_EXECUTOR_PATH' not in re.sub(r'#.*', '', text), 'submissions run in the managed runtime'
    assert re.search(r'^RUN python -m judge\.runtime\.build$', text, re.M), 'the image builds the submission runtime'
    assert re.search(r'^CMD \["judge-gateway", "--host", "0\.0\.0\.0", "--port", "8088", "--workers", ', text, re.M)


def test_readme_covers_every_deploy_file_and_the_operational_notes() -> None:
    readme = (DEPLOY / 'README.md').read_text()
    for path in DEPLOY.iterdir():
        if path.name != 'README.md':
            assert f'`{path.name}' in readme, f'deploy/README.md does not mention {path.name}'
    topics = ('rediss://', '--url_prefix', 'FLOWER_BASIC_AUTH', '/metrics', 'privileged', 'JUDGE_BROKER_SHARDS')
    for topic in (*topics, 'A Redis is one core and tops out', 'toolkit.bench capacity', '45,000-call step'):
        assert topic in readme, topic
