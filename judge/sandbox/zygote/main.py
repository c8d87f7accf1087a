"""The zygote process: a warm parent, started fresh by the slot server, that forks every spare child.

Started as ``python -I -B -c BOOT`` (a new interpreter: its own address-space layout and ``str``
hash secret, see `judge.sandbox.server.warm.lineage` for renewal) with

* fd 3: a ``SOCK_SEQPACKET`` socket to the server,
* fd 4: the directory holding the `judge` package (``O_PATH``: it may be hidden in the slot's
  mount namespace), used for the imports below and closed before any child is forked,
* fd 5: the slot's Landlock ruleset, when there is one.

The server first sends the slot's `ChildPrep` (uid, cgroups, filter, environment, preload).  The
zygote then makes itself the warm parent: it dies with the server, becomes the child subreaper
(every orphan of an execution is reparented to it and reaped by it), joins the slot's CPU share,
prepares the interpreter once for all children (`judge.sandbox.zygote.warm.prepare_interpreter`), forgets
the judge's modules (a program sees only the standard library and packages in ``sys.modules``),
confines itself (`judge.sandbox.zygote.child.confine_forker`) and answers ``R`` (ready).

Messages, one per datagram:

* server → zygote: ``F`` + work dir: fork a spare that will run there;
* server → zygote: ``W``: reap whatever has exited (the server asks when its slot does not empty);
* session host → zygote: ``G``: fork a live session's process (`judge.sandbox.zygote.session`);
  answered ``S`` + pid with three fds (control socket, stdout, stderr);
* zygote → server: ``R`` once ready; ``S`` + pid with four fds (control, stdout, stderr, status);
* zygote → server: ``X`` + pid, wait status, CPU seconds and max RSS (KB) of a spare it reaped.

Every child of the zygote is reaped: a spare as soon as it exits (its pidfd wakes the loop), any
other child (an orphan adopted as subreaper, a process cloned with ``CLONE_PARENT``, with or
without an exit signal: ``__WALL``) whenever the loop wakes up, and at the latest when the server,
whose slot does not empty, asks with ``W``.

In a forked child, `serve` calls `judge.sandbox.zygote.child.run_spare`, which never returns.
"""

from __future__ import annotations

import _signal
import _socket
import gc
import os
import select
import struct
import sys

from judge.sandbox.kernel import namespaces
from judge.sandbox.zygote.child import ChildFds, ChildPrep, confine_forker, run_spare
from judge.sandbox.zygote.recursion import stack_depth
from judge.sandbox.zygote.session import run_session
from judge.sandbox.zygote.warm import prepare_interpreter, watch_scientific

TYPE_CHECKING = False
if TYPE_CHECKING:  # a warm parent: only the small modules `judge.sandbox.fdio` lists
    from typing import NoReturn

SOCK_FD, PACKAGE_FD, LANDLOCK_FD = 3, 4, 5
PACKAGE_PATH = f'/proc/self/fd/{PACKAGE_FD}'
BOOT = (
    f'import sys;sys.path.insert(0,{PACKAGE_PATH!r});from judge.sandbox.zygote import main as z;z.run_spare(z.serve())'
)
"""The zygote's whole command: import from the inherited package dir, serve; a forked child runs its spare."""
PID = struct.Struct('>i')
EXIT = struct.Struct('>iidq')
MAX_MSG = 8192
_WALL = 0x40000000  # __WALL: wait for every kind of child, whatever its exit signal


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
    namespaces.set_pdeathsig(_signal.SIGKILL)
    prep = ChildPrep.from_message(prep_message, LANDLOCK_FD)
    if os.getppid() != prep.server_pid:  # the server died before the parent-death signal was set
        os._exit(0)
    namespaces.set_child_subreaper(True)
    # once for all children, whose `run_python` runs one frame deeper: BOOT → serve → run_spare → run_python
    scientific = prep.kind == 'scientific'
    # the bare parent preloads nothing: the programs it serves import nothing
    preload = [] if prep.kind == 'bare' else prep.preload + (prep.scientific if scientific else [])
    prepare_interpreter(prep.env, preload, frames_below=stack_depth() + 1, warm_up=scientific)
    if not scientific:
        watch_scientific(prep.watch)
    _forget_the_judge()
    os.close(PACKAGE_FD)
    sys.orig_argv[:] = [sys.executable]
    gc.collect()
    gc.freeze()  # the preloaded modules' objects too: children's collections never touch them
    confine_forker(prep)  # the zygote itself lives under the children's filters from here on
    return prep


def serve() -> NoReturn:  # pragma: no cover - runs in the zygote process
    """Be the zygote until the server goes away; a forked spare goes on in `run_spare` from here.

    The spare does not return from this frame first: releasing the frame's objects would write to
    pages it shares with the zygote, a copy-on-write page fault each, in every execution.
    Its locals stay reachable from the program (`sys._getframe`): the slot's `ChildPrep`, the
    zygote's socket (closed), pid numbers and the spare's own work dir, nothing else.
    """
    try:
        sock = _socket.socket(fileno=SOCK_FD)
        prep = _become_zygote(sock.recv(MAX_MSG * 8))
        sock.send(b'R')
        listen = sock.fileno()
        spares: dict[int, int] = {}  # pidfd -> pid of each spare not yet reaped
        while True:
            ready, _, _ = select.select([listen, *spares], [], [])
            for fd in ready:
                if fd != listen:
                    os.close(fd)
                    pid = spares.pop(fd)
                    _report(sock, pid, os.wait4(pid, _WALL))
            if listen in ready:
                request = sock.recv(MAX_MSG)
                if not request:
                    os._exit(0)
                if request[:1] == b'F':
                    ctrl_r, ctrl_w = os.pipe2(os.O_CLOEXEC)
                    out_r, out_w = os.pipe2(os.O_CLOEXEC)
                    err_r, err_w = os.pipe2(os.O_CLOEXEC)
                    status_r, status_w = os.pipe2(os.O_CLOEXEC)
                    pid = os.fork()
                    if pid == 0:  # the spare: its other descriptors are closed by `run_spare`
                        run_spare(prep, ChildFds(ctrl_r, out_w, err_w, status_w), os.fsdecode(request[1:]))
                    spares[os.pidfd_open(pid)] = pid
                    ours = [ctrl_w, out_r, err_r, status_r]
                    _send_fds(sock, b'S' + PID.pack(pid), ours)
                    for fd in (ctrl_r, out_w, err_w, status_w, *ours):
                        os.close(fd)
                elif request[:1] == b'G':  # a live session's process (`judge.sandbox.zygote.session`)
                    ctrl, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
                    out_r, out_w = os.pipe2(os.O_CLOEXEC)
                    err_r, err_w = os.pipe2(os.O_CLOEXEC)
                    pid = os.fork()
                    if pid == 0:
                        run_session(prep, theirs.fileno(), out_w, err_w)
                    spares[os.pidfd_open(pid)] = pid
                    _send_fds(sock, b'S' + PID.pack(pid), [ctrl.fileno(), out_r, err_r])
                    ctrl.close()
                    theirs.close()
                    for fd in (out_r, out_w, err_r, err_w):
                        os.close(fd)
            _reap_others(set(spares.values()))
    except BaseException:
        os._exit(1)


def _reap_others(spares: set[int]) -> None:  # pragma: no cover - runs in the zygote process
    """Reap every other child that has exited: orphans adopted as subreaper, ``CLONE_PARENT`` clones.

    Run whenever the zygote wakes up (a spare ended, a request, or the server's ``W`` when its slot
    does not empty); ``WNOWAIT`` first, so that a spare is left for its own pidfd to report.
    """
    while True:
        try:
            found = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT | _WALL)
        except ChildProcessError:
            return
        if found is None or found.si_pid in spares:
            return
        try:
            os.waitpid(found.si_pid, os.WNOHANG | _WALL)
        except ChildProcessError:
            return


def _send_fds(sock: _socket.socket, data: bytes, fds: list[int]) -> None:  # pragma: no cover
    """`socket.send_fds` without importing `socket` (it pulls in `enum` and `selectors`)."""
    sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack(f'{len(fds)}i', *fds))])


def _report(sock: _socket.socket, pid: int, reaped: tuple[int, int, object]) -> None:  # pragma: no cover
    _, status, usage = reaped
    cpu_s = usage.ru_utime + usage.ru_stime  # type: ignore[attr-defined]
    sock.send(b'X' + EXIT.pack(pid, status, cpu_s, usage.ru_maxrss))  # type: ignore[attr-defined]
