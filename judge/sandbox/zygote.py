"""The zygote: a small process, forked once from the slot server, that forks every spare child.

Why a separate process: after ``fork()`` every page of the forking process is shared copy-on-write
with the child, so a slot server that forked its own children paid a page fault for each page it
wrote afterwards, about 300 per execution (measured; ~0.6 ms of CPU on this kind of VM).  The
zygote is a copy of the server taken once, after start-up; between forks it runs a tiny loop that
touches few pages.  The server now forks only once, so its own pages stay private.

The zygote is the spares' parent, so it reaps them and reports how they ended.  It is root and
outside the slot's cgroup, so killing everything in the slot (or everything of the slot's uid)
never kills it; it lives under the children's no-new-privs, Landlock and seccomp filter, which they
inherit (`judge.sandbox.child.confine_forker`).  It dies with the server (parent-death signal, and
end of file on its socket).

Messages on a ``SOCK_SEQPACKET`` socket pair, one per datagram:

* server → zygote: ``F`` + work dir: fork a spare that will run there;
* zygote → server: ``S`` + pid, with four fds (control, stdout, stderr and status pipe ends);
* zygote → server: ``X`` + pid, wait status, CPU seconds and max RSS (KB) of a child it reaped.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import socket
import struct
from typing import NoReturn

from judge.sandbox import namespaces
from judge.sandbox.child import ChildFds, ChildPrep, confine_forker, run_spare
from judge.sandbox.execute import Spare
from judge.sandbox.warm import prepare_interpreter, stack_depth

_PID = struct.Struct('>i')
_EXIT = struct.Struct('>iidq')
_MAX_MSG = 8192


class ZygoteLost(RuntimeError):
    """The zygote died: the slot server cannot start executions any more and must be restarted."""


class Zygote:
    """The server's handle on its zygote."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock
        self._exits: dict[int, tuple[int, float, int]] = {}

    def _recv(self) -> tuple[bytes, list[int]]:
        try:
            data, fds, _, _ = socket.recv_fds(self.sock, _MAX_MSG, 4)
        except OSError as e:
            raise ZygoteLost(f'zygote socket: {e}') from e
        if not data:
            raise ZygoteLost('the zygote exited')
        if data[:1] == b'X':
            pid, status, cpu_s, max_rss_kb = _EXIT.unpack(data[1:])
            self._exits[pid] = (status, cpu_s, max_rss_kb)
        return data, fds

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
                    for fd in fds:
                        os.close(fd)
                    raise ZygoteLost(f'the zygote sent {len(fds)} fds for a spare, not 4')
                (pid,) = _PID.unpack(data[1:])
                ctrl, out, err, status = fds
                return Spare(pid, os.pidfd_open(pid), ctrl, out, err, status, workdir, self.reap)
            for fd in fds:
                os.close(fd)

    def reap(self, pid: int) -> tuple[int, float, int]:
        """Wait until the zygote has reaped ``pid``: its wait status, CPU seconds and max RSS (KB)."""
        while pid not in self._exits:
            _, fds = self._recv()
            for fd in fds:
                os.close(fd)
        return self._exits.pop(pid)

    def close(self) -> None:
        """Stop the zygote (its spares die with their control pipes)."""
        self.sock.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def start_zygote(prep: ChildPrep) -> Zygote:
    """Fork the zygote.

    A plain function, not a constructor, on purpose: a class call goes through C, which counts
    against the recursion limit without leaving a Python frame, and warm children inherit this
    stack (`judge.sandbox.warm` gives user code the budget of a fresh interpreter by counting frames).
    """
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server_pid = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the zygote
        ours.close()
        _serve(theirs, prep, server_pid)
    theirs.close()
    return Zygote(pid, ours)


def _serve(sock: socket.socket, prep: ChildPrep, server_pid: int) -> NoReturn:  # pragma: no cover - zygote
    """The zygote's loop: fork on request, reap and report children as they exit."""
    try:
        namespaces.set_pdeathsig(signal.SIGKILL)
        if os.getppid() != server_pid:  # the server died before the parent-death signal was set
            os._exit(0)
        # once for all children, which run user code three calls up: _fork → run_spare → run_python
        prepare_interpreter(prep.env, prep.preload, frames_below=stack_depth() + 3)
        gc.collect()
        gc.freeze()  # the preloaded modules' objects too: children's collections never touch them
        confine_forker(prep)  # the zygote itself lives under the children's filters from here on
        children: dict[int, int] = {}  # pidfd -> pid
        listen = sock.fileno()
        while True:
            ready, _, _ = select.select([listen, *children], [], [])
            for fd in ready:
                if fd == listen:
                    request = sock.recv(_MAX_MSG)
                    if not request:
                        os._exit(0)
                    pid, pidfd = _fork(sock, prep, os.fsdecode(request[1:]))
                    children[pidfd] = pid
                else:
                    pid = children.pop(fd)
                    os.close(fd)
                    _, status, usage = os.wait4(pid, 0)
                    report = _EXIT.pack(pid, status, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)
                    sock.send(b'X' + report)
    except BaseException:
        os._exit(1)


def _fork(sock: socket.socket, prep: ChildPrep, workdir: str) -> tuple[int, int]:  # pragma: no cover
    ctrl_r, ctrl_w = os.pipe2(os.O_CLOEXEC)
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    status_r, status_w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:  # the spare: it closes every other inherited fd (the socket too) while it prepares
        run_spare(prep, ChildFds(ctrl=ctrl_r, stdout=out_w, stderr=err_w, status=status_w), workdir)
    pidfd = os.pidfd_open(pid)
    ours = (ctrl_w, out_r, err_r, status_r)
    socket.send_fds(sock, [b'S' + _PID.pack(pid)], list(ours))
    for fd in (ctrl_r, out_w, err_w, status_w, *ours):
        os.close(fd)
    return pid, pidfd
