"""Flower against the real test stack: its API and its workers page, the latter in headless Chromium."""

from __future__ import annotations

import base64
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from judge.stack import free_port, wait_port
from tests.support.helpers import post, request
from tests.support.processes.services import Service
from tests.support.processes.stack import Stack

pytestmark = pytest.mark.integration

CHROMIUM_FLAGS = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-dev-shm-usage',
]


def _chromium() -> str:
    path = shutil.which('chromium') or shutil.which('chromium-browser')
    if path is None:
        pytest.skip('chromium is not installed (Debian package `chromium`: apt-get install -y chromium)')
    return path


@dataclass
class Flower:
    url: str
    headers: dict[str, str]


def _start_flower(stack: Stack, env_extra: dict[str, str]) -> tuple[Service, str]:
    port = free_port()
    env = {k: v for k, v in stack.env.items() if not k.startswith('FLOWER_')}
    env.update(env_extra)
    cmd = [sys.executable, '-m', 'celery', '-A', 'judge', 'flower', '--address=127.0.0.1', f'--port={port}']
    svc = Service(f'flower-{port}', cmd, env, stack.log_dir)
    try:
        wait_port(port, 20)
    except TimeoutError:
        svc.stop()
        raise
    return svc, f'http://127.0.0.1:{port}'


@pytest.fixture(scope='module')
def flower(stack: Stack) -> Iterator[Flower]:
    """`celery -A judge flower` on a free loopback port against the stack's Redis, without auth.

    Without auth its HTTP API answers only with FLOWER_UNAUTHENTICATED_API set.  (Headless Chromium
    cannot carry basic-auth credentials into the page's own XHR calls, which fill the workers table.)
    """
    svc, url = _start_flower(stack, {'FLOWER_UNAUTHENTICATED_API': 'true'})
    yield Flower(url, {})
    svc.stop()


@pytest.fixture(scope='module')
def flower_with_auth(stack: Stack) -> Iterator[Flower]:
    """Flower with basic auth from FLOWER_BASIC_AUTH, the way deploy/judge.env passes it."""
    password = secrets.token_hex(8)
    svc, url = _start_flower(stack, {'FLOWER_BASIC_AUTH': f'judge:{password}'})
    token = base64.b64encode(f'judge:{password}'.encode()).decode()
    yield Flower(url, {'Authorization': f'Basic {token}'})
    svc.stop()


def _wait_for_worker(url: str, headers: dict[str, str], timeout_s: float = 15.0) -> tuple[str, Any]:
    """Poll `url` (JSON) until it lists a worker named w1@...; return its name and the payload."""
    deadline = time.monotonic() + timeout_s
    payload: Any = None
    while time.monotonic() < deadline:
        status, payload = request(url, timeout_s=10, headers=headers)
        assert status == 200, (status, payload)
        rows = payload.get('data', payload) if isinstance(payload, dict) else payload
        names = [r.get('hostname', '') for r in rows] if isinstance(rows, list) else list(rows)
        for name in names:
            if name.startswith('w1@'):
                return name, payload
        time.sleep(0.5)
    raise AssertionError(f'no w1@ worker at {url} after {timeout_s}s: {payload!r}'[:2000])


def test_flower_basic_auth_covers_ui_and_api_but_not_health(flower_with_auth: Flower) -> None:
    url, headers = flower_with_auth.url, flower_with_auth.headers
    assert request(f'{url}/api/workers', timeout_s=10)[0] == 401
    assert request(f'{url}/workers', timeout_s=10)[0] == 401
    assert request(f'{url}/api/workers', timeout_s=10, headers=headers)[0] == 200
    # Documented in deploy/README.md: these two answer without credentials.
    assert request(f'{url}/healthcheck', timeout_s=10) == (200, 'OK')
    assert request(f'{url}/metrics', timeout_s=10)[0] == 200


def test_flower_sees_the_worker(stack: Stack, flower: Flower) -> None:
    chromium = _chromium()
    # One judged submission, so the worker has sent task events since Flower started.
    result = post(stack.url, '/run', {'type': 'python', 'solution': 'print(6 * 7)', 'expected_output': '42'})
    assert result['success'] is True, result

    # The API, over plain HTTP: `refresh=1` asks the workers directly (Celery inspect).
    name, workers = _wait_for_worker(f'{flower.url}/api/workers?refresh=1', flower.headers)
    assert workers[name].get('stats', {}).get('pool', {}).get('max-concurrency') == 2, workers[name]

    # The workers page fills its table from events (`/workers?json=1`): wait for them, then render it.
    assert _wait_for_worker(f'{flower.url}/workers?json=1', flower.headers)[0] == name
    page = f'{flower.url}/workers'
    with tempfile.TemporaryDirectory(prefix='judge-chromium-') as profile:
        env = {'HOME': profile, 'PATH': '/usr/bin:/bin', 'LANG': 'C.UTF-8'}
        # The virtual time budget lets the page's XHR finish before the DOM is dumped.
        base = [chromium, *CHROMIUM_FLAGS, f'--user-data-dir={profile}', '--virtual-time-budget=5000']
        dom = subprocess.run([*base, '--dump-dom', page], capture_output=True, text=True, timeout=25, env=env)
        assert dom.returncode == 0, dom.stderr[-2000:]
        assert 'id="workers-table"' in dom.stdout, dom.stdout[:2000]
        assert f'title="{name}"' in dom.stdout, dom.stdout[-3000:]

        # A screenshot for humans, kept with the service logs (outside the repository).
        shot = Path(stack.log_dir) / 'flower-workers.png'
        snap = subprocess.run(
            [*base, '--window-size=1280,800', f'--screenshot={shot}', page],
            capture_output=True,
            text=True,
            timeout=25,
            env=env,
        )
        assert snap.returncode == 0, snap.stderr[-2000:]
        assert shot.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_flower_task_view_shows_the_sub_id(stack: Stack, flower: Flower) -> None:
    sub_id = f'flower-{time.time_ns()}'
    post(stack.url, '/run', {'type': 'python', 'solution': 'print(1)', 'sub_id': sub_id})
    deadline = time.monotonic() + 10
    tasks: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status, tasks = request(f'{flower.url}/api/tasks?limit=50', timeout_s=10, headers=flower.headers)
        if status == 200 and any(sub_id in str(t.get('args')) for t in tasks.values()):
            break
        time.sleep(0.3)
    mine = [t for t in tasks.values() if sub_id in str(t.get('args'))]
    assert mine and mine[0]['name'] == 'judge.run' and 'batch=' in mine[0]['args'], tasks
