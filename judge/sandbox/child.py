"""What a forked execution child does before the user's program runs.

Order matters and is the same in every tier: new session → cgroups → rlimits → work dir →
drop to the slot's uid → no-new-privs → Landlock → close inherited fds → seccomp → run.  Any
failure before the user's code starts is reported on the status pipe (close-on-exec), so the
server can tell an infrastructure failure from the user's program failing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

from judge.sandbox import landlock, namespaces, seccomp
from judge.sandbox.limits import Limits, apply_rlimits
from judge.sandbox.warm import run_python

SETUP_FAILED_EXIT = 121


@dataclass
class ChildPlan:
    """Everything the child needs; built by the server, used after fork."""

    limits: Limits
    workdir: str
    env: dict[str, str]
    stdin_fd: int
    stdout_fd: int
    stderr_fd: int
    status_fd: int
    uid: int | None = None
    gid: int | None = None
    join_cgroups: Callable[[], None] | None = None
    landlock_fd: int | None = None
    seccomp_program: bytes | None = None
    argv: list[str] = field(default_factory=list)
    python_source: str | None = None
    python_filename: str = 'source.py'


def _drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() == 0 or os.geteuid() == 0:
        raise RuntimeError('still root after dropping privileges')


def _prepare(plan: ChildPlan) -> None:
    os.setsid()
    os.dup2(plan.stdin_fd, 0)
    os.dup2(plan.stdout_fd, 1)
    os.dup2(plan.stderr_fd, 2)
    if plan.join_cgroups is not None:
        plan.join_cgroups()
    apply_rlimits(plan.limits, set_nproc=plan.uid is not None)
    os.chdir(plan.workdir)
    if plan.uid is not None and plan.gid is not None:
        _drop_privileges(plan.uid, plan.gid)
    os.umask(0o022)
    if plan.landlock_fd is not None or plan.seccomp_program is not None:
        namespaces.set_no_new_privs()
    if plan.landlock_fd is not None:
        landlock.restrict_self(plan.landlock_fd)
    keep = plan.status_fd
    os.closerange(3, keep)
    os.closerange(keep + 1, 65536)
    if plan.seccomp_program is not None:
        seccomp.install(plan.seccomp_program)


def _fail(status_fd: int, exc: BaseException) -> NoReturn:
    try:
        os.write(status_fd, f'{type(exc).__name__}: {exc}'.encode(errors='replace')[:4000])
    finally:
        os._exit(SETUP_FAILED_EXIT)


def run_child(plan: ChildPlan) -> NoReturn:
    """Set the child up and run the program; never returns."""
    try:
        _prepare(plan)
        if plan.python_source is None:
            os.execve(plan.argv[0], plan.argv, plan.env)
    except BaseException as exc:  # everything before user code is infrastructure
        _fail(plan.status_fd, exc)
    os.close(plan.status_fd)
    run_python(plan.python_source, plan.python_filename, plan.env)
    sys.exit(0)  # unreachable: run_python exits
