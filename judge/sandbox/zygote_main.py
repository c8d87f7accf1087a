"""The zygote process: a warm parent, started fresh by the slot server, that forks every spare child.

Started as ``python -I -B -c BOOT`` (a new interpreter: its own address-space layout and ``str``
hash secret, see `judge.sandbox.parents` for renewal) with

* fd 3: a ``SOCK_SEQPACKET`` socket to the server,
* fd 4: the directory holding the `judge` package (``O_PATH``: it may be hidden in the slot's
  mount namespace), used for the imports below and closed before any child is forked,
* fd 5: the slot's Landlock ruleset, when there is one.

The server first sends the slot's `ChildPrep` (uid, cgroups, filter, environment, preload).  The
zygote then makes itself the warm parent: it dies with the server, becomes the child subreaper
(every orphan of an execution is reparented to it and reaped by it), joins the slot's CPU share,
prepares the interpreter once for all children (`judge.sandbox.warm.prepare_interpreter`), forgets
the judge's modules (a program sees only the standard library and packages in ``sys.modules``),
confines itself (`judge.sandbox.child.confine_forker`) and answers ``R`` (ready).

Messages, one per datagram:

* server → zygote: ``F`` + work dir: fork a spare that will run there;
* server → zygote: ``W``: reap whatever has exited (the server asks when its slot does not empty);
* zygote → server: ``R`` once ready; ``S`` + pid with four fds (control, stdout, stderr, status);
* zygote → server: ``X`` + pid, wait status, CPU seconds and max RSS (KB) of a spare it reaped.

Every child of the zygote is reaped as soon as it exits (``SIGCHLD`` wakes the loop; ``__WALL``
also reaps children that asked for no exit signal), whether it is a spare, an orphan adopted as
subreaper, or a process cloned with ``CLONE_PARENT``.

In a forked child, `serve` *returns* (with the spare's spec) instead of looping, all the way down
to the bootstrap frame, which then calls `judge.sandbox.child.run_spare`: the user's code runs
with no frame of the zygote's loop below it.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import socket
import struct
import sys

from judge.sandbox import namespaces
from judge.sandbox.child import ChildFds, ChildPrep, confine_forker
from judge.sandbox.child import run_spare as run_spare
from judge.sandbox.warm import prepare_interpreter, stack_depth

SOCK_FD, PACKAGE_FD, LANDLOCK_FD = 3, 4, 5
PACKAGE_PATH = f'/proc/self/fd/{PACKAGE_FD}'
BOOT = (
    f'import sys;sys.path.insert(0,{PACKAGE_PATH!r});from judge.sandbox import zygote_main as z;z.run_spare(z.serve())'
)
"""The zygote's whole command: import from the inherited package dir, serve; a forked child runs its spare."""
PID = struct.Struct('>i')
EXIT = struct.Struct('>iidq')
MAX_MSG = 8192
_WALL = 0x40000000  # __WALL: wait for every kind of child, whatever its exit signal


def _noop(signum: int, frame: object) -> None:
    """The SIGCHLD handler: the wake-up fd does the work."""


def _forget_the_judge() -> None:
    """Drop the judge's modules from ``sys.modules`` and its path from the import caches.

    The zygote keeps running their functions (held by reference); nothing imports them again.
    """
    for name in [n for n in sys.modules if n == 'judge' or n.startswith('judge.')]:
        del sys.modules[name]
    for key in [k for k in sys.path_importer_cache if k.startswith(PACKAGE_PATH)]:
        del sys.path_importer_cache[key]
    if PACKAGE_PATH in sys.path:
        sys.path.remove(PACKAGE_PATH)


def _become_zygote(prep_message: bytes) -> ChildPrep:
    namespaces.set_pdeathsig(signal.SIGKILL)
    prep = ChildPrep.from_message(prep_message, LANDLOCK_FD)
    if os.getppid() != prep.server_pid:  # the server died before the parent-death signal was set
        os._exit(0)
    namespaces.set_child_subreaper(True)
    # once for all children, whose `run_python` runs as deep as this frame: BOOT → run_spare → run_python
    prepare_interpreter(prep.env, prep.preload, frames_below=stack_depth())
    _forget_the_judge()
    os.close(PACKAGE_FD)
    sys.orig_argv[:] = [sys.executable]
    gc.collect()
    gc.freeze()  # the preloaded modules' objects too: children's collections never touch them
    confine_forker(prep)  # the zygote itself lives under the children's filters from here on
    return prep


def serve() -> tuple[ChildPrep, ChildFds, str]:  # pragma: no cover - runs in the zygote process
    """Be the zygote until the server goes away; returns only in a forked spare (its spec)."""
    try:
        sock = socket.socket(fileno=SOCK_FD)
        prep = _become_zygote(sock.recv(MAX_MSG * 8))
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.signal(signal.SIGCHLD, _noop)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        sock.send(b'R')
    except BaseException:
        os._exit(1)
    spec = _loop(sock, prep, wake_r, wake_w)
    return spec


def _loop(
    sock: socket.socket, prep: ChildPrep, wake_r: int, wake_w: int
) -> tuple[ChildPrep, ChildFds, str]:  # pragma: no cover - runs in the zygote process
    spares: set[int] = set()
    listen = sock.fileno()
    try:
        while True:
            ready, _, _ = select.select([listen, wake_r], [], [])
            if wake_r in ready:
                try:
                    os.read(wake_r, 4096)
                except BlockingIOError:
                    pass
                _reap(sock, spares)
            if listen in ready:
                request = sock.recv(MAX_MSG)
                if not request:
                    os._exit(0)
                if request[:1] == b'W':
                    _reap(sock, spares)
                    continue
                fds = _fork(sock, spares)
                if fds is None:
                    continue
                # the spare: back to a plain process, then all the way down to the bootstrap frame
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                os.close(wake_r)
                os.close(wake_w)
                sock.close()
                return prep, fds, os.fsdecode(request[1:])
    except BaseException:
        os._exit(1)


def _reap(sock: socket.socket, spares: set[int]) -> None:  # pragma: no cover - runs in the zygote process
    """Reap every child that has exited; report the spares' ends to the server."""
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG | _WALL)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in spares:
            spares.discard(pid)
            sock.send(b'X' + EXIT.pack(pid, status, usage.ru_utime + usage.ru_stime, usage.ru_maxrss))


def _fork(sock: socket.socket, spares: set[int]) -> ChildFds | None:  # pragma: no cover - runs in the zygote process
    """Fork a spare; in the spare, return its ends of the pipes (None in the zygote)."""
    ctrl_r, ctrl_w = os.pipe2(os.O_CLOEXEC)
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    status_r, status_w = os.pipe2(os.O_CLOEXEC)
    ours = (ctrl_w, out_r, err_r, status_r)
    pid = os.fork()
    if pid == 0:
        for fd in ours:
            os.close(fd)
        return ChildFds(ctrl=ctrl_r, stdout=out_w, stderr=err_w, status=status_w)
    spares.add(pid)
    socket.send_fds(sock, [b'S' + PID.pack(pid)], list(ours))
    for fd in (ctrl_r, out_w, err_w, status_w, *ours):
        os.close(fd)
    return None
