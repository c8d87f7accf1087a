"""The whole stack against a TLS-only redis-server (rediss://, certificates made here)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.stack import free_port, wait_port
from tests.support.helpers import assert_stack_judges
from tests.support.paths import ROOT
from tests.support.processes.services import Service, start_gateway, start_worker
from tests.support.processes.stack import stack_env

pytestmark = pytest.mark.integration


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(['openssl', *args], cwd=cwd, check=True, capture_output=True)


def make_certs(directory: Path) -> None:
    """A throwaway CA and a server certificate for 127.0.0.1."""
    _openssl(
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '2',
        '-subj',
        '/CN=judge-test-ca',
        '-keyout',
        'ca.key',
        '-out',
        'ca.crt',
        cwd=directory,
    )
    _openssl(
        'req',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-subj',
        '/CN=127.0.0.1',
        '-keyout',
        'server.key',
        '-out',
        'server.csr',
        cwd=directory,
    )
    (directory / 'ext.cnf').write_text('subjectAltName=IP:127.0.0.1,DNS:localhost\n')
    _openssl(
        'x509',
        '-req',
        '-in',
        'server.csr',
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-days',
        '2',
        '-extfile',
        'ext.cnf',
        '-out',
        'server.crt',
        cwd=directory,
    )


@pytest.fixture(scope='module')
def tls_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str], Path]]:
    certs = tmp_path_factory.mktemp('certs')
    logs = tmp_path_factory.mktemp('tls-logs')
    make_certs(certs)
    port = free_port()
    redis = Service(
        'redis-tls',
        [
            'redis-server',
            '--port',
            '0',
            '--tls-port',
            str(port),
            '--bind',
            '127.0.0.1',
            '--tls-cert-file',
            str(certs / 'server.crt'),
            '--tls-key-file',
            str(certs / 'server.key'),
            '--tls-ca-cert-file',
            str(certs / 'ca.crt'),
            '--tls-auth-clients',
            'no',
            '--save',
            '',
            '--appendonly',
            'no',
        ],
        dict(os.environ),
        logs,
    )
    wait_port(port)
    env = stack_env(f'rediss://127.0.0.1:{port}/0', Path('/tmp') / f'judge-test-tls-{port}')
    env['JUDGE_REDIS_TLS_CA_FILE'] = str(certs / 'ca.crt')
    worker = start_worker(env, logs, name='tls')
    gateway, url = start_gateway(env, logs)
    yield url, env, certs
    gateway.stop()
    worker.stop()
    redis.stop()


def test_plain_connections_are_refused(tls_stack: tuple[str, dict[str, str], Path]) -> None:
    _, env, _ = tls_stack
    port = env['REDIS_URI'].rsplit(':', 1)[1].split('/')[0]
    out = subprocess.run(['redis-cli', '-p', port, 'PING'], capture_output=True, text=True, timeout=10)
    assert 'PONG' not in out.stdout


def test_judging_over_tls(tls_stack: tuple[str, dict[str, str], Path]) -> None:
    url, _, _ = tls_stack
    assert_stack_judges(url, '/run/long-batch', n=20)


def test_wrong_ca_is_rejected(tls_stack: tuple[str, dict[str, str], Path], tmp_path: Path) -> None:
    _, env, certs = tls_stack
    make_certs(tmp_path)  # another CA, which did not sign the server's certificate
    code = (
        'from judge.settings import Settings; from judge.transport.shard import Shard; '
        'Shard.from_settings(Settings()).client.ping()'
    )
    out = subprocess.run(
        [sys.executable, '-c', code],
        env={**env, 'JUDGE_REDIS_TLS_CA_FILE': str(tmp_path / 'ca.crt')},
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
    )
    assert out.returncode != 0 and 'certificate verify failed' in out.stderr
