"""The container recipe without a container engine (`make test-image`): build, then run the image.

deploy/base-image.sh makes the Debian root file system (debootstrap); `scripts.image_chroot build`
carries out deploy/Dockerfile's own steps in a copy of it; then Redis, two worker instances
(`judge-worker`, the compose worker's command), the gateway (the image's CMD) and Flower run from
the built image in chroots on the host's loopback, and the HumanEval-style check goes through them.
What this cannot prove without an engine: `docker import` / `docker build` themselves and compose's
privileged containers (deploy/README.md says so).

Optional (minutes; needs root, debootstrap and Debian's archive and PyPI): set JUDGE_TEST_IMAGE=1.
JUDGE_IMAGE_BASE (default /var/tmp/judge-rootfs-bookworm) is reused when present;
JUDGE_IMAGE_ROOTFS (default /var/tmp/judge-image-test) is rebuilt unless JUDGE_IMAGE_PREBUILT=1.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from judge.sandbox.slots import LOCK_DIR
from judge.stack import free_port, wait_port
from scripts.image_chroot import image_config, run_command
from tests.support.helpers import post, request
from tests.support.humaneval_style import cases, check_records
from tests.support.processes.services import ROOT, Service
from tests.support.processes.stack import TIME_LIMIT_S

pytestmark = [
    pytest.mark.deploy,
    pytest.mark.skipif(not os.environ.get('JUDGE_TEST_IMAGE'), reason='optional: make test-image'),
    pytest.mark.timeout(1800),
]

NODE = 'image'
IMAGE_LANGS = ('python', 'cpp', 'bash')  # the image's toolchains: Debian's python3, g++, bash


@dataclass
class Image:
    rootfs: Path
    url: str
    flower_url: str
    marker: str
    worker: Service


def _build(base: Path, rootfs: Path) -> None:
    if not (base / 'etc' / 'debian_version').exists():
        subprocess.run([str(ROOT / 'deploy' / 'base-image.sh'), '-d', str(base)], check=True, timeout=1200)
    if os.environ.get('JUDGE_IMAGE_PREBUILT') and (rootfs / '.judge-image.json').exists():
        return
    build = [sys.executable, '-m', 'scripts.image_chroot', 'build', '--base', str(base), '--rootfs', str(rootfs)]
    subprocess.run(build, check=True, timeout=1500, cwd=ROOT)


@pytest.fixture(scope='module')
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Image]:
    if os.geteuid() != 0:
        pytest.skip('chroot and mounts need root')
    base = Path(os.environ.get('JUDGE_IMAGE_BASE', '/var/tmp/judge-rootfs-bookworm'))
    rootfs = Path(os.environ.get('JUDGE_IMAGE_ROOTFS', '/var/tmp/judge-image-test'))
    _build(base, rootfs)
    # A file only the image has: user code that reads it ran in the image's root, not the host's.
    marker = secrets.token_hex(8)
    (rootfs / 'usr' / 'share' / 'judge-image-id').write_text(marker + '\n')
    log_dir = tmp_path_factory.mktemp('image')
    redis_port, gateway_port, flower_port = free_port(), free_port(), free_port()
    env = {
        'REDIS_URI': f'redis://127.0.0.1:{redis_port}/0',
        'MAX_EXECUTION_TIME': str(TIME_LIMIT_S),
        'JUDGE_NODE_NAME': NODE,
        'JUDGE_WORKER_INSTANCES': '2',
        'MAX_WORKERS': '1',
    }
    # Slot numbers are host-wide: the image's workers share the host's lock directory (compose mounts it too).
    binds = [LOCK_DIR]
    gateway_cmd = [str(a) for a in image_config(rootfs)['cmd']]
    gateway_cmd[gateway_cmd.index('--host') + 1] = '127.0.0.1'  # loopback only
    gateway_cmd[gateway_cmd.index('--port') + 1] = str(gateway_port)
    gateway_cmd[gateway_cmd.index('--workers') + 1] = '1'
    parts = {
        'redis': ['redis-server', '--port', str(redis_port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        'worker': ['judge-worker'],
        'gateway': gateway_cmd,
        'flower': ['celery', '-A', 'judge', 'flower', '--address=127.0.0.1', f'--port={flower_port}'],
    }
    services: dict[str, Service] = {}
    try:
        for name, argv in parts.items():
            extra = env | ({'FLOWER_UNAUTHENTICATED_API': 'true'} if name == 'flower' else {})
            cmd = run_command(rootfs, argv, extra, binds)
            services[name] = Service(f'image-{name}', cmd, dict(os.environ), log_dir)
            if name == 'redis':
                wait_port(redis_port, 30)
        for i in (1, 2):
            services['worker'].wait_log(f'judge-{i}@{NODE} ready.', 120)
        wait_port(gateway_port, 60)
        wait_port(flower_port, 60)
        url = f'http://127.0.0.1:{gateway_port}'
        yield Image(rootfs, url, f'http://127.0.0.1:{flower_port}', marker, services['worker'])
    finally:
        for svc in reversed(services.values()):
            svc.stop()


def test_user_code_runs_in_the_image_with_its_python(image: Image) -> None:
    probe = (
        'import sys, sympy\nprint(sys.executable)\nprint(sys.base_prefix)\n'
        "print(open('/usr/share/judge-image-id').read().strip())\n"
    )
    result = post(image.url, '/run', {'type': 'python', 'solution': probe}, timeout_s=60)
    assert result['success'], json.dumps(result)
    executable, base, marker = result['stdout'].split()
    assert executable.startswith('/opt/judge-runtime/') and base == '/usr', result  # the runtime, a venv of Debian's
    assert marker == image.marker, result
    assert 'tier namespaces' in image.worker.log() or 'tier landlock' in image.worker.log(), image.worker.log()[-2000:]


def test_humaneval_style_check_in_the_image(image: Image, tmp_path: Path) -> None:
    rows = [row for row in cases() if row['type'] in IMAGE_LANGS]
    src, out = tmp_path / 'in.jsonl', tmp_path / 'out.jsonl'
    src.write_text(''.join(json.dumps(row) + '\n' for row in rows))
    cmd = [sys.executable, '-m', 'toolkit.evaluate', str(src), '-o', str(out), '--url', image.url, '--json']
    run = subprocess.run([*cmd, '--no-progress'], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, (run.stdout, run.stderr)
    check_records([json.loads(line) for line in out.read_text().splitlines()], rows)


def test_status_and_flower_list_both_instances_of_the_image(image: Image) -> None:
    names = {f'judge-{i}@{NODE}' for i in (1, 2)}
    deadline = time.monotonic() + 30
    while True:
        _, body = request(image.url + '/status', timeout_s=10)
        _, workers = request(f'{image.flower_url}/api/workers?refresh=1', timeout_s=30)
        listed = {n['name'] for n in body.get('nodes', [])} if isinstance(body, dict) else set()
        if (listed == names and names <= set(workers)) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert listed == names, body
    assert names <= set(workers), workers
