"""A live session's process: forked by a warm parent, it keeps one ``__main__`` and runs its cells.

The zygote forks it on the host's ``G`` request (`judge.sandbox.zygote.main`) with three descriptors:
a ``SOCK_SEQPACKET`` control socket (moved to fd `CTRL`) and its stdout and stderr pipes.  The
session host (`judge.sandbox.server.sessions`) moves it into the session's own cgroups, then sends
its plan; the process enters its work dir, restricts itself with the session's own Landlock layer
(its own domain: no signal or abstract socket reaches or leaves it), drops to the session's uid,
sets its rlimits and answers ``R``.  From then on it waits for messages, frozen by the host between
them:

* ``cell``: run one cell (`judge.sandbox.zygote.cell`) and answer ``D`` after flushing its output;
* ``fork``: fork ``n`` children, each given its own control socket and pipes (received with the
  message), which go on as new sessions; report each child's pid (``P``) and ``F`` when done, after
  moving itself into a new Landlock domain (`judge.sandbox.zygote.branch`);
* end of file on the control socket: exit.

Messages to the process are marshal data from the host (trusted); what it sends back is parsed by
the host as untrusted bytes.
"""

from __future__ import annotations

import _signal
import _socket
import marshal
import os
import sys

from judge.sandbox.fdio import apply_rlimits
from judge.sandbox.kernel import landlock, namespaces
from judge.sandbox.zygote import cell, warm
from judge.sandbox.zygote.branch import fork_children, reap_forks
from judge.sandbox.zygote.child import ChildPrep, _drop_privileges

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

CTRL = 3
"""The control socket's descriptor in a session process (and in each of its forks)."""
MAX_MSG = 1 << 24
SETUP_FAILED_EXIT = 121


def _recv(sock: _socket.socket) -> tuple[dict[str, Any], list[int]]:
    """One message from the host and the descriptors it carries; exits at end of file."""
    data, ancillary, _, _ = sock.recvmsg(MAX_MSG, _socket.CMSG_SPACE(4 * 256))
    if not data:
        os._exit(0)
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % 4
            fds += [int.from_bytes(payload[i : i + 4], sys.byteorder) for i in range(0, usable, 4)]
    return marshal.loads(data), fds


def _setup(prep: ChildPrep, sock: _socket.socket) -> None:
    """Take the plan: work dir, Landlock layer, uid, rlimits, environment (see the module's doc)."""
    plan, fds = _recv(sock)
    os.chdir(plan['workdir'])
    for fd in fds:  # the session's Landlock layer (its own domain)
        landlock.restrict_self(fd)
        os.close(fd)
    if plan.get('uid') is not None:
        _drop_privileges(int(plan['uid']), int(plan['gid']))
    os.umask(0o022)
    apply_rlimits(plan['rlimits'])
    os.environ['HOME'] = os.environ['TMPDIR'] = os.getcwd()
    sys.argv = ['']
    sys.orig_argv = [sys.executable, '-I']
    cell.install()


def run_session(prep: ChildPrep, ctrl: int, out: int, err: int) -> NoReturn:
    """Set the session up, then serve its messages until the host closes the control socket."""
    try:
        os.setsid()
        namespaces.set_pdeathsig(_signal.SIGKILL)  # dies with its warm parent (which dies with the host)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.dup2(ctrl, CTRL)
        null = os.open('/dev/null', os.O_RDONLY)
        os.dup2(null, 0)
        os.closerange(CTRL + 1, 65536)
        sock = _socket.socket(fileno=CTRL)
        _setup(prep, sock)
        main = warm._main
        assert main is not None, 'prepare_interpreter() must run first'
        sys.modules['__main__'] = main
        ns = main.__dict__
        sock.send(b'R')
    except BaseException as exc:
        try:
            os.write(CTRL, b'E' + f'{type(exc).__name__}: {exc}'.encode(errors='replace')[:4000])
        finally:
            os._exit(SETUP_FAILED_EXIT)
    while True:
        try:
            message, fds = _recv(sock)
        except KeyboardInterrupt:  # the host's interrupt came just after the cell's end
            continue
        reap_forks()
        op = message.get('op')
        if op == 'cell':
            sock.send(_cell(ns, message))
        elif op == 'fork':
            fork_children(sock, message, fds, _recv)  # in a child this returns as that new session
        else:
            for fd in fds:
                os.close(fd)


def _cell(ns: dict[str, Any], message: dict[str, Any]) -> bytes:
    """Run one cell in ``ns``; the ``D`` record.  Runs at the depth `judge.sandbox.zygote.warm.run_python`
    runs programs at, so that cells get a fresh interpreter's recursion budget."""
    name = f'<cell-{int(message.get("index", 0))}>'
    code = str(message.get('code', ''))
    cell.WATCH.start()
    cell.fresh_stdin(bytes(message.get('stdin') or b''))
    cell.seed_cell(int(message.get('seed') or 0))
    status, value, extra = 0, None, 0
    try:
        body, tail = cell.split(code, name)
        exec(body, ns)
        if tail is not None:
            result = eval(tail, ns)
            if result is not None:
                ns['_'] = result
            value = cell.value_text(result) if message.get('value', True) else None
    except SystemExit as exc:
        code_ = exc.code
        status = code_ & 0xFF if isinstance(code_, int) else (0 if code_ is None else 1)
        extra = cell.FLAG_EXIT
    except BaseException as exc:
        status, extra = 1, cell.FLAG_RAISED
        if isinstance(exc, KeyboardInterrupt):
            extra |= cell.FLAG_INTERRUPTED
        cell.report_error(exc, code, name, str(message.get('style') or 'traceback'))
        del exc
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    cell.WATCH.flags |= extra
    return cell.done_message(status, value)
