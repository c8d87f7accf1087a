"""A pool process's connection to its worker's session host (`judge.sandbox.server.sessions.host`).

Every pool process of one worker instance reaches the same host through a unix socket in a
root-only directory of the work root, named after the worker.  The first one that finds no host
starts it, under a file lock so that only one does: it binds the socket, claims a host-wide slot
number for the host's jail (`judge.sandbox.slots`), and hands both to the host, which outlives it and
ends with the worker's main process.  A request caught by the host's death answers ``host_lost``:
its sessions are gone with it, and the caller rebuilds them by replay.  Knows nothing of Celery.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any

from judge.sandbox.errors import ProtocolError, SandboxError
from judge.sandbox.protocol import recv_message, send_message
from judge.sandbox.slots import claim_slot

HOST_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'server', 'sessions', 'host.py')
START_TIMEOUT_S = 90.0


@dataclass
class HostConfig:
    """How to start a session host (the worker's settings, `judge.worker.sessions`)."""

    node: str
    python: str
    work_root: str
    memory_mb: int
    pids: int
    time_s: float
    output_bytes: int
    capture_bytes: int
    file_bytes: int
    budget_mb: int
    session_uid_base: int
    tier: str = 'auto'
    allow_unsafe: bool = False
    uid_base: int = 61000
    cpus: float = 1.0
    hash_seed: int = 0
    max_sessions: int = 2000
    disk_mb: int = 64
    warm: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def socket_dir(self) -> str:
        """Root's alone: programs never reach it."""
        return os.path.join(os.path.realpath(self.work_root), 'sessions')

    @property
    def socket_path(self) -> str:
        """This worker's host socket."""
        return os.path.join(self.socket_dir, f'host-{hashlib.sha256(self.node.encode()).hexdigest()[:16]}.sock')


class SessionClient:
    """Requests to the session host; thread-safe; starts the host when there is none."""

    def __init__(self, config: HostConfig, worker_pid: int | None = None) -> None:
        self.config = config
        self.worker_pid = worker_pid or os.getppid()
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self.hello: dict[str, Any] = {}

    def request(self, header: dict[str, Any], blobs: tuple[bytes, ...] = ()) -> tuple[dict[str, Any], list[bytes]]:
        """Send one request and wait for its answer; ``{'ok': False, 'host_lost': True}`` when the host died
        meanwhile (it is started again by the next request)."""
        with self._lock:
            for attempt in (0, 1):
                sock = self._connect()
                try:
                    send_message(sock.fileno(), header, blobs)
                    return recv_message(sock.fileno())
                except (OSError, ProtocolError) as exc:
                    self._drop()
                    if attempt or header.get('op') not in ('ping', 'info', 'close'):
                        return {'ok': False, 'host_lost': True, 'error': f'the session host went away: {exc}'}, []
        raise AssertionError('unreachable')

    def _connect(self) -> socket.socket:
        if self._sock is not None:
            return self._sock
        sock = _try_connect(self.config.socket_path)
        if sock is None:
            sock = self._launch()
        self._sock = sock
        return sock

    def _drop(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def _launch(self) -> socket.socket:
        """Start the host under the launch lock (unless another process just did), then connect."""
        os.makedirs(self.config.socket_dir, mode=0o700, exist_ok=True)
        os.chmod(self.config.socket_dir, 0o700)
        lock = os.open(self.config.socket_path + '.lock', os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            sock = _try_connect(self.config.socket_path)
            if sock is not None:
                return sock
            self._start_host()
            found = _try_connect(self.config.socket_path)
            if found is None:
                raise SandboxError('the session host started but does not answer')
            return found
        finally:
            os.close(lock)

    def _start_host(self) -> None:
        path = self.config.socket_path
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(128)
        slot, slot_fd = claim_slot()
        try:
            config = {k: v for k, v in self.config.__dict__.items() if k != 'extra'} | self.config.extra
            config |= {'slot': slot, 'listen_fd': listener.fileno(), 'slot_fd': slot_fd, 'worker_pid': self.worker_pid}
            proc = subprocess.Popen(
                [self.config.python, '-I', HOST_SCRIPT],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env={'PATH': '/usr/bin:/bin', 'LANG': 'C.UTF-8'},
                pass_fds=(listener.fileno(), slot_fd),
                start_new_session=True,
            )
            assert proc.stdin is not None and proc.stdout is not None
            send_message(proc.stdin.fileno(), json.loads(json.dumps(config)))
            try:
                hello, _ = _recv_with_timeout(proc.stdout.fileno(), START_TIMEOUT_S)
            except (OSError, ProtocolError) as exc:
                proc.kill()
                raise SandboxError(f'the session host did not start: {exc}') from exc
            finally:
                proc.stdin.close()
                proc.stdout.close()
            if not hello.get('ok'):
                proc.kill()
                raise SandboxError(f'the session host refused to start: {hello.get("error")}')
            self.hello = hello
        finally:
            listener.close()
            os.close(slot_fd)

    def shutdown(self) -> None:
        """Stop the host and every session it holds (when it runs)."""
        with self._lock:
            sock = self._sock or _try_connect(self.config.socket_path)
            if sock is not None:
                try:
                    send_message(sock.fileno(), {'op': 'shutdown'})
                    recv_message(sock.fileno())
                except (OSError, ProtocolError):
                    pass
                sock.close()
            self._sock = None

    def close(self) -> None:
        """Hang up (the host and its sessions stay)."""
        with self._lock:
            self._drop()


def _try_connect(path: str) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def _recv_with_timeout(fd: int, timeout_s: float) -> tuple[dict[str, Any], list[bytes]]:
    import select

    poller = select.poll()
    poller.register(fd, select.POLLIN)
    if not poller.poll(int(timeout_s * 1000)):
        raise ProtocolError(f'no answer within {timeout_s:.0f}s')
    return recv_message(fd)
