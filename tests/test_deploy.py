"""Static checks of deploy/: compose file, env example, scripts, systemd units, Dockerfile.

No Docker and no services: these read files, import the settings and run `bash -n` / `sh -n`.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import AliasChoices, TypeAdapter
from pydantic_core import PydanticUndefined

from api.cli import parse_args as parse_gateway_args
from judge.sandbox.slots import LOCK_DIR
from judge.settings import Settings
from judge.stack import gateway_command, worker_command

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / 'deploy'
COMPOSE = DEPLOY / 'compose.yaml'
ENV_EXAMPLE = DEPLOY / 'judge.env.example'
SCRIPTS = [DEPLOY / 'master.sh', DEPLOY / 'worker.sh']
UNITS = DEPLOY / 'systemd'

_VAR_LINE = re.compile(r'^#?([A-Z][A-Z0-9_]*)=(.*)$')
_SECTION = re.compile(r'^# (Upstream names|Ours|Flower|Deployment)\b')
# ${NAME}, ${NAME:-default}, $NAME; `$$` is compose's escape for a literal `$`.
_COMPOSE_VAR = re.compile(r'(?<!\$)\$(?:\{([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*))')


def _settings_aliases() -> dict[str, str]:
    """Env var name -> settings field name, from the `validation_alias` of every field."""
    aliases: dict[str, str] = {}
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
        names = [c for c in choices if isinstance(c, str)]
        assert names, f'settings field {name!r} has no env var alias'
        aliases.update(dict.fromkeys(names, name))
    return aliases


def _env_example() -> list[tuple[str, str, str, int]]:
    """(name, value, section, line index) of every variable line, commented out or not."""
    out = []
    section = ''
    for i, line in enumerate(ENV_EXAMPLE.read_text().splitlines()):
        m = _SECTION.match(line)
        if m:
            section = m.group(1)
        m = _VAR_LINE.match(line)
        if m:
            out.append((m.group(1), m.group(2), section, i))
    return out


def _deployment_vars() -> set[str]:
    return {name for name, _, section, _ in _env_example() if section == 'Deployment'}


def _compose_services(text: str) -> dict[str, str]:
    """The text of each service under the top-level `services:` key (a parser-free split)."""
    blocks: dict[str, str] = {}
    current: str | None = None
    in_services = False
    for line in text.splitlines():
        if line and not line[0].isspace():
            in_services, current = line.startswith('services:'), None
            continue
        m = re.match(r'^  ([\w-]+):\s*$', line)
        if in_services and m:
            current = m.group(1)
            blocks[current] = ''
        elif current is not None:
            blocks[current] += line + '\n'
    return blocks


def _block_scalar(block: str, opener: str) -> str:
    """The lines of the YAML block scalar that follows the line ending in ``opener``."""
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if line.rstrip().endswith(opener))
    indent = None
    body = []
    for line in lines[start + 1 :]:
        if not line.strip():
            body.append('')
            continue
        width = len(line) - len(line.lstrip())
        indent = width if indent is None else indent
        if width < indent:
            break
        body.append(line[indent:])
    return '\n'.join(body) + '\n'


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


# --- env example -------------------------------------------------------------------------------


def test_env_example_documents_every_setting_with_its_default() -> None:
    entries = {name: (value, section, i) for name, value, section, i in _env_example()}
    lines = ENV_EXAMPLE.read_text().splitlines()
    for alias, field_name in _settings_aliases().items():
        assert alias in entries, f'{alias} (judge.settings.{field_name}) is missing from {ENV_EXAMPLE.name}'
        value, section, i = entries[alias]
        assert section in ('Upstream names', 'Ours'), (alias, section)
        before = lines[i - 1]
        assert before.startswith('# ') and len(before) > 10, f'{alias}: no one-line meaning above it: {before!r}'
        field = Settings.model_fields[field_name]
        if field.default is PydanticUndefined:  # default_factory (interpreter paths): host-dependent
            continue
        if value == '':
            assert field.default in (None, ''), (alias, field.default)
            continue
        shown = TypeAdapter(field.annotation).validate_python(value)
        assert shown == field.default, f'{alias}: example says {value!r}, the default is {field.default!r}'


def test_env_example_settings_sections_hold_only_settings() -> None:
    aliases = _settings_aliases()
    for name, _, section, _ in _env_example():
        if section in ('Upstream names', 'Ours'):
            assert name in aliases, f'{name} is documented as a setting but judge.settings has no such alias'
        elif section == 'Flower':
            assert name.startswith('FLOWER_'), name
        else:
            assert section == 'Deployment', (name, section)
            assert name not in aliases, f'{name} is a setting, not a deployment-only variable'


def test_env_example_sets_nothing_and_has_no_secrets() -> None:
    for line in ENV_EXAMPLE.read_text().splitlines():
        m = re.match(r'^([A-Z][A-Z0-9_]*)=', line)
        assert m is None, f'example lines must stay commented out (defaults apply): {line!r}'
    for name, value, _, _ in _env_example():
        if re.search(r'PASSWORD|SECRET|TOKEN|AUTH', name):
            assert value == '', f'{name} carries a value in the example'
        assert not re.search(r'://[^/@\s]*:[^/@\s]+@', value), f'{name}: credentials in a URL'


def test_every_deployment_variable_is_used() -> None:
    texts = [COMPOSE.read_text(), *(p.read_text() for p in SCRIPTS), *(p.read_text() for p in UNITS.iterdir())]
    for name in _deployment_vars():
        assert any(name in text for text in texts), f'{name} is documented but nothing in deploy/ reads it'


# --- compose -----------------------------------------------------------------------------------


def test_compose_references_only_known_variables() -> None:
    known = set(_settings_aliases()) | _deployment_vars()
    used = {a or b for a, b in _COMPOSE_VAR.findall(COMPOSE.read_text())}
    assert 'GATEWAY_WORKERS' in used
    unknown = used - known
    assert not unknown, f'compose.yaml uses variables neither settings nor documented deployment vars: {unknown}'


def test_compose_services_commands_and_healthchecks() -> None:
    text = COMPOSE.read_text()
    assert '\t' not in text
    services = _compose_services(text)
    assert set(services) == {'redis', 'gateway', 'worker', 'flower'}
    for name, block in services.items():
        assert 'healthcheck:' in block, name
    # Nothing comes from an image registry: Redis runs from the judge's own image.
    assert re.findall(r'^\s*image: (.*)$', text, re.M) == ['${JUDGE_IMAGE:-celery-code-judge:latest}'] * 2
    assert '<<: *judge' not in services['redis'] and 'image: ${JUDGE_IMAGE' in services['redis']
    assert re.search(r'test: \[CMD, redis-cli, ping\]', services['redis'])
    anchor = text[text.index('x-judge: &judge') : text.index('\nservices:')]
    assert 'path: judge.env' in anchor and 'dockerfile: deploy/Dockerfile' in anchor
    for name in ('gateway', 'worker', 'flower'):
        block = services[name]
        assert '<<: *judge' in block, f'{name} does not read the shared env file'
        assert re.search(r'depends_on:\s+redis:\s+condition: service_healthy', block), name
    gateway = services['gateway']
    # judge-gateway: several processes share their metrics (PROMETHEUS_MULTIPROC_DIR, api.cli).
    assert re.search(r'command:\s+- judge-gateway\s', gateway)
    assert "- --workers\n      - '${GATEWAY_WORKERS:-4}'" in gateway
    assert 'http://127.0.0.1:8088/ping' in gateway
    worker = services['worker']
    assert 'privileged: true' in worker and 'cgroup: private' in worker
    assert f'- {LOCK_DIR}:{LOCK_DIR}' in worker, 'containers on one host must share the slot lock directory'
    assert 'test: [CMD, judge-worker, --check]' in worker, 'every instance of the container must answer'
    flower = services['flower']
    assert 'command: [celery, -A, judge, flower, --address=0.0.0.0, --port=5555]' in flower
    assert 'FLOWER_URL_PREFIX' in flower and 'healthcheck' in flower


def test_compose_worker_script_is_valid_sh() -> None:
    script = _block_scalar(_compose_services(COMPOSE.read_text())['worker'], '- |').replace('$$', '$')
    assert script.rstrip().splitlines()[-1] == 'exec judge-worker', 'deploy/worker.sh plans the instances'
    check = subprocess.run(['sh', '-n'], input=script, capture_output=True, text=True, timeout=10)
    assert check.returncode == 0, check.stderr


def test_compose_parses_as_yaml() -> None:
    yaml = pytest.importorskip('yaml', reason='PyYAML is not installed; the parser-free checks above still ran')
    doc: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    services = doc['services']
    assert set(services) == {'redis', 'gateway', 'worker', 'flower'}
    for name in ('gateway', 'worker', 'flower'):
        svc = services[name]
        assert svc['depends_on']['redis']['condition'] == 'service_healthy'
        assert svc['env_file'] == [{'path': 'judge.env', 'required': False}]
        assert svc['environment']['REDIS_URI'] == '${REDIS_URI:-redis://redis:6379/0}'
    assert services['worker']['privileged'] is True
    assert services['worker']['command'][:2] == ['sh', '-c']


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
