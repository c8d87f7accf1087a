"""Forking a live session into independent ones: the session process's side (`judge.sandbox.zygote.session`).

The host (`judge.sandbox.server.sessions.forking`) sends ``fork`` with, for each child, a control
socket and stdout/stderr pipes of its own, and a plan made from the parent's descriptors and
mappings while it was frozen: which regular files to open again from the child's copy of the work
dir (relative path, flags, offset), which descriptors to close (pipes, sockets, event loops: they
would be channels between the copies), which shared mappings to turn private.  The parent forks the
children; each child takes its own descriptors and waits for ``adopt`` (its work dir and Landlock
layer, sent on its own socket, which the parent never holds), then carries the plan out, enters its
layer and answers ``R``.  The parent then moves itself into a new Landlock domain too.  None of
this is trusted: the host checks every child and the parent from outside afterwards.
"""

from __future__ import annotations

import _socket
import ctypes
import os

from judge.sandbox.kernel import landlock
from judge.sandbox.kernel.libc import libc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CTRL = 3
PER_CHILD = 3
"""Descriptors per child in a ``fork`` message: control socket, stdout and stderr pipes."""
_PROT_READ, _PROT_WRITE = 1, 2
_MAP_PRIVATE, _MAP_FIXED, _MAP_ANONYMOUS = 0x02, 0x10, 0x20
_mmap = libc.mmap
_mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_mmap.restype = ctypes.c_void_p
_mprotect = libc.mprotect
_mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


_forked: list[int] = []
"""Pids of this process's forks not yet reaped (they are sessions of their own; the host kills them)."""


def reap_forks() -> None:
    """Reap the forks the host has ended, so that none stays a zombie of this process."""
    for pid in list(_forked):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _forked.remove(pid)


def fork_children(sock: _socket.socket, message: dict[str, Any], fds: list[int], recv: Any) -> bool:
    """Fork ``message['n']`` children; True in a child (adopted, ready), False in the parent once its own
    forks are made and it has moved into its new domain (answered ``F``).

    The children are forked as a tree (`_spawn`): each fork copies the whole interpreter's page tables,
    and a tree spreads that over the CPUs."""
    n = int(message['n'])
    mine, rest = fds[: PER_CHILD * n], fds[PER_CHILD * n :]
    index = _spawn(sock, 0, n, bool(message.get('tree', True)))
    if index >= 0:
        _child(sock, mine[PER_CHILD * index : PER_CHILD * (index + 1)], fds, message, recv)
        return True
    for fd in mine:
        os.close(fd)
    for fd in rest:  # the parent's own new layer
        landlock.restrict_self(fd)
        os.close(fd)
    sock.send(b'F')
    return False


def _spawn(sock: _socket.socket, lo: int, hi: int, tree: bool = True) -> int:
    """Fork the children ``lo`` to ``hi - 1``: each fork becomes the middle one of its range and forks the
    rest of it; reports ``P`` + index + pid of each.  The index this process became (-1: none)."""
    me = -1
    while lo < hi:
        mid = (lo + hi) // 2 if tree else hi - 1
        pid = os.fork()
        if pid == 0:
            _forked.clear()
            me, lo = mid, mid + 1
            continue
        _forked.append(pid)
        sock.send(b'P' + mid.to_bytes(4, 'big') + pid.to_bytes(4, 'big'))
        hi = mid
    return me


def _child(sock: _socket.socket, own: list[int], received: list[int], plan: dict[str, Any], recv: Any) -> None:
    ctrl, out, err = own
    os.dup2(ctrl, CTRL)
    os.dup2(out, 1)
    os.dup2(err, 2)
    for fd in received:
        os.close(fd)
    null = os.open('/dev/null', os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for fd in plan.get('close') or ():
        try:
            os.close(int(fd))
        except OSError:
            pass
    adopt, layer = recv(sock)
    workdir = str(adopt['workdir'])
    for fd in layer:
        landlock.restrict_self(fd)
        os.close(fd)
    for fd, relative, flags, offset in plan.get('reopen') or ():
        _reopen(int(fd), os.path.join(workdir, relative), int(flags), int(offset))
    for start, end, prot in plan.get('maps') or ():
        _private(int(start), int(end), int(prot))
    os.chdir(workdir)
    os.environ['HOME'] = os.environ['TMPDIR'] = workdir
    sock.send(b'R')


def _reopen(fd: int, path: str, flags: int, offset: int) -> None:
    """Put a new open file description of ``path`` (the child's copy) on ``fd``, where the parent's was."""
    cloexec = bool(flags & os.O_CLOEXEC)
    keep = flags & (os.O_ACCMODE | os.O_APPEND | os.O_NONBLOCK)
    try:
        new = os.open(path, keep | os.O_CLOEXEC)
    except OSError:
        os.close(fd)
        return
    try:
        os.lseek(new, offset, os.SEEK_SET)
    except OSError:
        pass
    os.dup2(new, fd, inheritable=not cloexec)
    os.close(new)


def _private(start: int, end: int, prot: int) -> None:
    """Replace a shared mapping by a private copy of its content at the same address."""
    size = end - start
    data = ctypes.string_at(start, size) if prot & _PROT_READ else None
    flags = _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_FIXED
    if _mmap(start, size, prot | _PROT_WRITE, flags, -1, 0) != start:
        return
    if data is not None:
        ctypes.memmove(start, data, size)
    if not prot & _PROT_WRITE:
        _mprotect(start, size, prot)
