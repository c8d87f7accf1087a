"""Static checks of deploy/'s configuration: the env example against the settings, and the compose file.

No Docker and no services: these read files, import the settings and run `sh -n`."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest
from pydantic import AliasChoices, TypeAdapter
from pydantic_core import PydanticUndefined

from judge.sandbox.slots import LOCK_DIR
from judge.settings import Settings
from tests.support.paths import ROOT

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
