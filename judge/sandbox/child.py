"""What a forked execution child does before the user's program runs.

The slot's zygote forks the child *before* the request arrives (a spare), so the fork and most of
the jail setup are off the request's critical path.  The spare, in order: new session → cgroups →
work dir → drop to the slot's uid → no-new-privs → Landlock → close inherited fds → seccomp; then
it waits on its control pipe.  When the request comes it reads the plan (limits, program,
stdin), sets its rlimits, puts stdin in a memfd and runs the program.

Any failure before the user's code starts is reported on the status pipe (close-on-exec), so the
server can tell an infrastructure failure from the user's program failing.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from judge.sandbox import landlock, namespaces, seccomp
from judge.sandbox.limits import Limits, apply_rlimits
from judge.sandbox.protocol import ProtocolError, read_exact
from judge.sandbox.warm import run_python

SETUP_FAILED_EXIT = 121
_LEN = struct.Struct('>I')


@dataclass
class ChildPrep:
    """The slot's fixed part of a child's setup; built once by the server."""

    uid: int | None = None
    gid: int | None = None
    join_cgroups: Callable[[], None] | None = None
    landlock_fd: int | None = None
    seccomp_program: bytes | None = None
    env: dict[str, str] = field(default_factory=dict)
    """The programs' environment, less ``HOME`` and ``TMPDIR`` (the child's work dir)."""


@dataclass
class ChildFds:
    """The child's ends of its pipes, as numbered in the server before the fork."""

    ctrl: int
    stdout: int
    stderr: int
    status: int


def _drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() == 0 or os.geteuid() == 0:
        raise RuntimeError('still root after dropping privileges')


def _prepare(prep: ChildPrep, fds: ChildFds, workdir: str) -> None:
    os.setsid()
    os.dup2(fds.stdout, 1)
    os.dup2(fds.stderr, 2)
    if prep.join_cgroups is not None:
        prep.join_cgroups()
    os.chdir(workdir)
    if prep.uid is not None and prep.gid is not None:
        _drop_privileges(prep.uid, prep.gid)
    os.umask(0o022)
    if prep.landlock_fd is not None or prep.seccomp_program is not None:
        namespaces.set_no_new_privs()
    if prep.landlock_fd is not None:
        landlock.restrict_self(prep.landlock_fd)
    keep = sorted((fds.ctrl, fds.status))
    os.closerange(3, keep[0])
    os.closerange(keep[0] + 1, keep[1])
    os.closerange(keep[1] + 1, 65536)
    if prep.seccomp_program is not None:
        seccomp.install(prep.seccomp_program)


def _read_plan(ctrl: int) -> tuple[dict[str, Any], bytes]:
    try:
        (header_len,) = _LEN.unpack(read_exact(ctrl, _LEN.size))
        plan = json.loads(read_exact(ctrl, header_len))
        (stdin_len,) = _LEN.unpack(read_exact(ctrl, _LEN.size))
        return plan, read_exact(ctrl, stdin_len)
    except ProtocolError as e:
        raise EOFError(str(e)) from e


def encode_plan(plan: dict[str, Any], stdin: bytes) -> bytes:
    """The message the server writes on a spare's control pipe."""
    header = json.dumps(plan, separators=(',', ':')).encode()
    return b''.join((_LEN.pack(len(header)), header, _LEN.pack(len(stdin)), stdin))


def _stdin_from(data: bytes) -> None:
    fd = os.memfd_create('stdin', 0)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    os.dup2(fd, 0)
    os.close(fd)


def _fail(status_fd: int, exc: BaseException) -> NoReturn:
    try:
        os.write(status_fd, f'{type(exc).__name__}: {exc}'.encode(errors='replace')[:4000])
    finally:
        os._exit(SETUP_FAILED_EXIT)


def run_spare(prep: ChildPrep, fds: ChildFds, workdir: str) -> NoReturn:
    """Prepare, wait for the plan, run the program; never returns."""
    try:
        _prepare(prep, fds, workdir)
        try:
            plan, stdin = _read_plan(fds.ctrl)
        except EOFError:
            os._exit(0)  # the server retired this spare unused
        os.close(fds.ctrl)
        limits = Limits.from_dict(plan['limits'])
        apply_rlimits(limits, set_nproc=prep.uid is not None)
        _stdin_from(stdin)
        source = plan.get('python_source')
        if source is None:
            argv = [str(a) for a in plan['argv']]
            os.execve(argv[0], argv, {**prep.env, 'HOME': workdir, 'TMPDIR': workdir})
    except BaseException as exc:  # everything before user code is infrastructure
        _fail(fds.status, exc)
    os.close(fds.status)
    run_python(source, str(plan.get('python_filename') or 'source.py'), workdir)
    sys.exit(0)  # unreachable: run_python exits
