"""The slot server's handle on a zygote: a warm parent process that forks every spare child.

Why a separate process: after ``fork()`` every page of the forking process is shared copy-on-write
with the child, so a slot server that forked its own children would pay a page fault for each page
it wrote afterwards, and it writes many while handling an execution.  Between forks the zygote runs
a tiny loop that touches few pages.

The zygote is a *fresh* interpreter (`spawn_zygote`: ``posix_spawn``, no fork of the server), so
it holds nothing of the server's (no configuration, no request), and each zygote has its own
address-space layout and ``str`` hash secret; `judge.sandbox.server.warm.lineage` replaces zygotes after a
bounded number of executions or seconds.  What the zygote process does is in
`judge.sandbox.zygote.main` (its protocol too).

The zygote is the spares' parent and the slot's subreaper, so it reaps them (and any orphan) and
reports how the spares ended.  It is root and outside the slot's memory and pids cgroups, so killing
everything in the slot never kills it; it lives under the children's no-new-privs, Landlock and
seccomp filter.  It dies with the server (parent-death signal, and end of file on its socket).
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import socket
import sys
import time

from judge.sandbox.errors import ZygoteLost
from judge.sandbox.server.execute import Spare
from judge.sandbox.zygote.child import ChildPrep
from judge.sandbox.zygote.main import BOOT, EXIT, LANDLOCK_FD, MAX_MSG, PACKAGE_FD, PID, SOCK_FD

_ZYGOTE_ENV = {'PATH': '/usr/bin:/bin', 'LANG': 'C.UTF-8', 'LD_BIND_NOW': '1'}
"""The zygote's own environment (children get theirs from `ChildPrep.env`).  ``LD_BIND_NOW``: every
libc/libpython symbol is resolved once, in the zygote, instead of in each forked child."""
_HIGH_FD = 10


def _readable(fd: int, timeout_s: float) -> bool:
    """Whether ``fd`` is readable within ``timeout_s`` (poll: descriptors above 1023 too, as in the
    session host, which holds several per live session)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0, int(timeout_s * 1000 + 0.999))))


def _high(fd: int) -> int:
    """A close-on-exec duplicate of ``fd`` numbered above the zygote's fixed fds."""
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _HIGH_FD)


class Zygote:
    """The server's handle on one zygote."""

    def __init__(self, pid: int, sock: socket.socket, kind: str = 'lean') -> None:
        self.pid = pid
        self.pidfd = os.pidfd_open(pid)
        self.sock = sock
        self.kind = kind
        self.started = time.monotonic()
        self.forks = 0
        """Spares forked so far."""
        self.ready = False
        self.live: set[int] = set()
        """Spares forked and not yet reported ended."""
        self._exits: dict[int, tuple[int, float, int]] = {}

    def fileno(self) -> int:
        """The socket, for `select`."""
        return self.sock.fileno()

    def _recv(self, timeout_s: float | None = None) -> tuple[bytes, list[int]]:
        if timeout_s is not None:
            if not _readable(self.sock.fileno(), timeout_s):
                raise ZygoteLost(f'the zygote did not answer within {timeout_s:.0f}s')
        try:
            data, fds, _, _ = socket.recv_fds(self.sock, MAX_MSG, 4)
        except OSError as e:
            raise ZygoteLost(f'zygote socket: {e}') from e
        if not data:
            raise ZygoteLost('the zygote exited')
        kind = data[:1]
        if kind == b'X':
            pid, status, cpu_s, max_rss_kb = EXIT.unpack(data[1:])
            self._exits[pid] = (status, cpu_s, max_rss_kb)
            self.live.discard(pid)
        elif kind == b'R':
            self.ready = True
        return data, fds

    def _drain(self, data: bytes, fds: list[int]) -> None:
        for fd in fds:
            os.close(fd)

    def poll(self) -> None:
        """Read every message already waiting (readiness, exit reports) without blocking."""
        while _readable(self.sock.fileno(), 0):
            self._drain(*self._recv())

    def wait_ready(self, timeout_s: float) -> None:
        """Block until the zygote has said it is ready; `ZygoteLost` if it dies or takes too long."""
        deadline = time.monotonic() + timeout_s
        while not self.ready:
            self._drain(*self._recv(max(0.0, deadline - time.monotonic())))

    def due(self, max_forks: int, max_age_s: float) -> bool:
        """Whether this zygote has served long enough to be replaced."""
        return self.forks >= max_forks or time.monotonic() - self.started >= max_age_s

    def fork_spare(self, workdir: str) -> Spare:
        """A new spare child waiting for its plan in ``workdir``."""
        try:
            self.sock.send(b'F' + os.fsencode(workdir))
        except OSError as e:
            raise ZygoteLost(f'zygote socket: {e}') from e
        while True:
            data, fds = self._recv()
            if data[:1] == b'S':
                if len(fds) != 4:
                    self._drain(data, fds)
                    raise ZygoteLost(f'the zygote sent {len(fds)} fds for a spare, not 4')
                (pid,) = PID.unpack(data[1:])
                ctrl, out, err, status = fds
                self.forks += 1
                self.live.add(pid)
                return Spare(pid, os.pidfd_open(pid), ctrl, out, err, status, workdir, self.reap, self.pid)
            self._drain(data, fds)

    def fork_session(self) -> tuple[int, list[int]]:
        """A new live session process (`judge.sandbox.zygote.session`): its pid and the server's ends of
        its control socket, stdout and stderr (the session host's)."""
        try:
            self.sock.send(b'G')
        except OSError as e:
            raise ZygoteLost(f'zygote socket: {e}') from e
        while True:
            data, fds = self._recv()
            if data[:1] == b'S':
                if len(fds) != 3:
                    self._drain(data, fds)
                    raise ZygoteLost(f'the zygote sent {len(fds)} fds for a session, not 3')
                (pid,) = PID.unpack(data[1:])
                self.forks += 1
                self.live.add(pid)
                return pid, fds
            self._drain(data, fds)

    def reap(self, pid: int, timeout_s: float | None = None) -> tuple[int, float, int]:
        """Wait until the zygote has reaped ``pid``: its wait status, CPU seconds and max RSS (KB)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while pid not in self._exits:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            self._drain(*self._recv(left))
        return self._exits.pop(pid)

    def ask_reap(self) -> None:
        """Ask the zygote to reap whatever has exited (children that sent it no signal included)."""
        try:
            self.sock.send(b'W')
        except OSError as e:
            raise ZygoteLost(f'zygote socket: {e}') from e

    def alive(self) -> bool:
        """Whether the zygote process is still running."""
        return not _readable(self.pidfd, 0)

    def close(self) -> None:
        """Stop the zygote (its spares die with their control pipes) and reap it."""
        self.sock.close()
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:  # already reaped (the slot server is pid 1 of its namespace)
            pass
        os.close(self.pidfd)


def spawn_zygote(prep: ChildPrep, package_fd: int, kind: str = 'lean', hash_seed: int | None = None) -> Zygote:
    """Start a fresh zygote process; it is ready after `Zygote.wait_ready` (or once `Zygote.ready`).

    ``package_fd`` is an ``O_PATH`` descriptor of the directory that holds the `judge` package;
    ``hash_seed``: a fixed ``PYTHONHASHSEED`` (live sessions replay on other nodes), else a random one.
    """
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    inherited = [(_high(theirs.fileno()), SOCK_FD), (_high(package_fd), PACKAGE_FD)]
    if prep.landlock_fd is not None:
        inherited.append((_high(prep.landlock_fd), LANDLOCK_FD))
    theirs.close()
    try:
        pid = os.posix_spawn(
            sys.executable,
            # No -B: its children's sys.flags are the fresh mode's (``python3 -I``); the read-only
            # root keeps any bytecode write from landing.
            # (``-I`` ignores ``PYTHONHASHSEED``: with a fixed one, ``-s -P`` and an environment of ours.)
            [sys.executable, '-I', '-c', BOOT] if hash_seed is None else [sys.executable, '-s', '-P', '-c', BOOT],
            _ZYGOTE_ENV if hash_seed is None else {**_ZYGOTE_ENV, 'PYTHONHASHSEED': str(hash_seed)},
            file_actions=[(os.POSIX_SPAWN_DUP2, fd, target) for fd, target in inherited],
        )
    finally:
        for fd, _ in inherited:
            os.close(fd)
    zygote = Zygote(pid, ours, kind)
    try:
        ours.send(prep.to_message(kind))
    except OSError as e:
        zygote.close()
        raise ZygoteLost(f'the new zygote went away: {e}') from e
    return zygote
