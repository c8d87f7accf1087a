"""Network: TCP, UDP, IPv6, raw and netlink sockets, DNS, and a world-writable Unix socket on the host.

The socket cases are in the main batch (`tests.support.attacks.batch`): seccomp refuses the socket itself.
Pathname Unix sockets cross network namespaces and Landlock (ABI 7) does not govern connect(): a listener
on the host records whatever would arrive."""

from __future__ import annotations

import os
import socket
import stat
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.attacks.batch import NET_DENIED, MainBatch, refused
from tests.support.attacks.kit import batch, py, report_of, survived

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]


def test_network_tcp_udp_ipv6_raw_are_refused(main_batch: MainBatch) -> None:
    result = main_batch.results['network']
    survived(result)
    got = report_of(result)
    for name in ('redis_tcp', 'gateway_tcp', 'redis_tcp6', 'outside_tcp', 'udp', 'udp6', 'raw', 'netlink'):
        assert got[name] in NET_DENIED, (name, got)
    # the seccomp filter refuses the socket itself (EPERM) before any address is tried
    assert got['redis_tcp'] == 'EPERM' and got['gateway_tcp'] == 'EPERM', got


def test_dns_lookup_fails(main_batch: MainBatch) -> None:
    result = main_batch.results['dns']
    survived(result)
    dns = report_of(result)['dns']
    assert dns.startswith('gaierror:') or dns in NET_DENIED, dns


# --- a Unix socket on the host ---------------------------------------------------------------------


UNIX_SOCKET = """
import socket
def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(2)
        s.connect(path)
        s.sendall(P['marker'].encode())
    finally:
        s.close()
report(unix=attempt(connect, P['path']))
"""


@pytest.fixture
def host_unix_socket() -> Iterator[tuple[str, list[bytes]]]:
    """A world-writable Unix socket on the host in /tmp (as `redis-server --unixsocket ... --unixsocketperm 777`)."""
    directory = Path('/tmp', f'judge-attack-sock-{uuid.uuid4().hex[:12]}')
    directory.mkdir(mode=0o755)
    path = directory / 'redis.sock'
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o777)
    assert stat.S_ISSOCK(path.stat().st_mode)
    server.listen(4)
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    received.append(conn.recv(256))
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield str(path), received
    finally:
        stop.set()
        thread.join(5)
        server.close()
        path.unlink(missing_ok=True)
        directory.rmdir()


def test_host_unix_socket_is_unreachable(gateway_url: str, host_unix_socket: tuple[str, list[bytes]]) -> None:
    """Pathname Unix sockets cross network namespaces and Landlock (ABI 7) does not govern connect()."""
    path, received = host_unix_socket
    marker = f'UNIX-{uuid.uuid4().hex[:12]}'
    result = batch(gateway_url, [py(UNIX_SOCKET, path=path, marker=marker)], route='/run/batch')[0]
    survived(result)
    outcome = report_of(result)['unix']
    time.sleep(0.3)  # let the listener record what arrived
    assert marker.encode() not in b''.join(received), f'the host socket received {received!r}'
    assert refused(outcome), outcome
