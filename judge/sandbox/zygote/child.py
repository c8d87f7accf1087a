"""What a forked execution child does before the user's program runs.

The slot's zygote (`judge.sandbox.zygote.main`) forks the child *before* the request arrives (a
spare), so the fork and most of the jail setup are off the request's critical path.  The zygote is
already in the slot's CPU-share cgroups and under the core limit, no-new-privs,
Landlock and the seccomp filter (`confine_forker`), which the spare inherits.  The spare, in order:
new session → cgroups → work dir → drop to the slot's uid → close inherited fds; then it waits on
its control pipe.  When the request comes it reads the plan (rlimits, program, stdin), sets the
rlimits, puts stdin in a memfd and runs the program (warm Python reports its end on the plan's
``done_path``, see `judge.sandbox.zygote.warm`).

Any failure before the user's code starts is reported on the status pipe (close-on-exec), so the
server can tell an infrastructure failure from the user's program failing.
"""

from __future__ import annotations

import marshal
import os
import struct

from judge.sandbox.errors import ProtocolError
from judge.sandbox.fdio import apply_rlimits, read_exact, write_all
from judge.sandbox.kernel import coredump, landlock, namespaces, seccomp
from judge.sandbox.zygote.warm import run_python

TYPE_CHECKING = False
if TYPE_CHECKING:  # a warm parent imports this module: nothing beyond `judge.sandbox.fdio`'s list
    from typing import Any, NoReturn

SETUP_FAILED_EXIT = 121
_LEN = struct.Struct('>I')


class ChildPrep:
    """The slot's fixed part of a child's setup: built by the server, sent to each warm parent.

    A plain class, like the others the slot server imports: `dataclasses` pulls in `inspect` and
    `ast`, about 1.5 MB that every forked child would share and every fork and exit would pay for.
    Everything here is something a child can observe about itself anyway (its uid, its cgroups, its
    environment, its filter), so a program reading its parent's memory learns nothing new.
    """

    def __init__(
        self,
        uid: int | None = None,
        gid: int | None = None,
        cgroup_procs: list[str] | None = None,
        landlock_fd: int | None = None,
        seccomp_program: bytes | None = None,
        env: dict[str, str] | None = None,
        preload: list[str] | None = None,
        parent_procs: list[str] | None = None,
        server_pid: int = 0,
        scientific: list[str] | None = None,
        kind: str = 'lean',
        watch: list[str] | None = None,
    ) -> None:
        self.uid = uid
        self.gid = gid
        self.cgroup_procs: list[str] = cgroup_procs or []
        """The slot cgroups' ``cgroup.procs`` files, which each child writes itself into."""
        self.landlock_fd = landlock_fd
        self.seccomp_program = seccomp_program
        self.env: dict[str, str] = env or {}
        """The programs' environment, less ``HOME`` and ``TMPDIR`` (the child's work dir)."""
        self.preload: list[str] = preload or []
        """Modules warm Python imports once, in the zygote (`judge.sandbox.zygote.warm.prepare_interpreter`)."""
        self.parent_procs: list[str] = parent_procs or []
        """``cgroup.procs`` files the warm parent joins itself (the slot's CPU share); children inherit them."""
        self.server_pid = server_pid
        """The slot server, the warm parents' parent (they exit if it is gone)."""
        self.scientific: list[str] = scientific or []
        """Modules the *scientific* warm parent imports on top of `preload` before its warm-up."""
        self.kind = kind
        """The kind of warm parent this prep starts (`judge.sandbox.server.warm.parents`): ``lean`` or
        ``scientific``."""
        self.watch: list[str] = watch or []
        """Top-level packages whose first lookup in a lean or bare child may move the program to the scientific
        parent (`judge.sandbox.zygote.upgrade`); empty when the slot has none."""
        self.cgroup_fds: list[int] = []
        """``cgroup_procs`` opened for writing by `confine_forker`, inherited by every child."""

    def to_message(self, kind: str = 'lean') -> bytes:
        """The prep as the server sends it to a freshly started warm parent of ``kind`` (marshal: trusted
        both ways)."""
        return marshal.dumps(
            {
                'uid': self.uid,
                'gid': self.gid,
                'cgroup_procs': self.cgroup_procs,
                'landlock': self.landlock_fd is not None,
                'seccomp_program': self.seccomp_program,
                'env': self.env,
                'preload': self.preload,
                'parent_procs': self.parent_procs,
                'server_pid': self.server_pid,
                'scientific': self.scientific,
                'kind': kind,
                'watch': self.watch,
            }
        )

    @classmethod
    def from_message(cls, data: bytes, landlock_fd: int) -> ChildPrep:
        """The prep a warm parent received; its Landlock ruleset is the inherited ``landlock_fd``."""
        got = marshal.loads(data)
        return cls(
            uid=got['uid'],
            gid=got['gid'],
            cgroup_procs=got['cgroup_procs'],
            landlock_fd=landlock_fd if got['landlock'] else None,
            seccomp_program=got['seccomp_program'],
            env=got['env'],
            preload=got['preload'],
            parent_procs=got['parent_procs'],
            server_pid=got['server_pid'],
            scientific=got['scientific'],
            kind=got['kind'],
            watch=got['watch'],
        )


class ChildFds:
    """The child's ends of its pipes, as numbered in the zygote before the fork."""

    __slots__ = ('ctrl', 'status', 'stderr', 'stdout')

    def __init__(self, ctrl: int, stdout: int, stderr: int, status: int) -> None:
        self.ctrl = ctrl
        self.stdout = stdout
        self.stderr = stderr
        self.status = status


def _drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() == 0 or os.geteuid() == 0:
        raise RuntimeError('still root after dropping privileges')


def confine_forker(prep: ChildPrep) -> None:
    """Apply the slot-wide restrictions once, in the process that forks the children (the zygote).

    The zygote first joins the slot's CPU-share cgroups (`ChildPrep.parent_procs`), which every
    child then inherits at no cost.  The core limit of 1 (`judge.sandbox.kernel.coredump`), no-new-privs,
    Landlock and the seccomp filter are inherited across ``fork``, so every child starts under them
    without paying for installing them (mostly loading the filter); the limit comes first, because the
    filter then refuses every change to it.  The memory and pids cgroups' ``cgroup.procs`` files are
    opened first, because Landlock then refuses to open them: each child joins them by writing to the
    inherited descriptors.
    """
    for path in prep.parent_procs:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, b'0')
        finally:
            os.close(fd)
    prep.cgroup_fds = [os.open(path, os.O_WRONLY | os.O_CLOEXEC) for path in prep.cgroup_procs]
    coredump.forbid_core_dumps()
    if prep.landlock_fd is not None or prep.seccomp_program is not None:
        namespaces.set_no_new_privs()
    if prep.landlock_fd is not None:
        landlock.restrict_self(prep.landlock_fd)
        os.close(prep.landlock_fd)  # enforced now; the children need no handle on it
        prep.landlock_fd = None
    if prep.seccomp_program is not None:
        seccomp.install(prep.seccomp_program)


def _prepare(prep: ChildPrep, fds: ChildFds, workdir: str) -> None:
    os.setsid()
    os.dup2(fds.stdout, 1)
    os.dup2(fds.stderr, 2)
    for fd in prep.cgroup_fds:
        os.write(fd, b'0')  # "0" is the writer: move this process into the slot's cgroup
    os.chdir(workdir)
    if prep.uid is not None and prep.gid is not None:
        _drop_privileges(prep.uid, prep.gid)
    os.umask(0o022)
    keep = sorted((fds.ctrl, fds.status))
    os.closerange(3, keep[0])
    os.closerange(keep[0] + 1, keep[1])
    os.closerange(keep[1] + 1, 65536)


def _read_plan(ctrl: int) -> tuple[dict[str, Any], bytes]:
    try:
        (header_len,) = _LEN.unpack(read_exact(ctrl, _LEN.size))
        plan = marshal.loads(read_exact(ctrl, header_len))
        (stdin_len,) = _LEN.unpack(read_exact(ctrl, _LEN.size))
        return plan, read_exact(ctrl, stdin_len)
    except ProtocolError as e:
        raise EOFError(str(e)) from e


def encode_plan(plan: dict[str, Any], stdin: bytes) -> bytes:
    """The message the server writes on a spare's control pipe.

    The plan is marshalled, not JSON: the server (trusted) writes it, and one C call to read it
    touches fewer of the freshly forked child's pages than a JSON decoder would.
    """
    header = marshal.dumps(plan)
    return b''.join((_LEN.pack(len(header)), header, _LEN.pack(len(stdin)), stdin))


def _stdin_from(data: bytes) -> None:
    fd = os.memfd_create('stdin', 0)
    write_all(fd, data)
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
        apply_rlimits(plan['rlimits'])
        _stdin_from(stdin)
        source = plan.get('python_source')
        if source is None:
            argv = [str(a) for a in plan['argv']]
            os.execve(argv[0], argv, {**prep.env, 'HOME': workdir, 'TMPDIR': workdir})
        filename = str(plan.get('python_filename') or 'source.py')
        done_path = plan.get('done_path')
        upgrade = int(plan.get('upgrade') or 0)
        prefix = plan.get('prefix')
    except BaseException as exc:  # everything before user code is infrastructure
        _fail(fds.status, exc)
    os.close(fds.status)
    run_python(source, filename, workdir, done_path, upgrade, prefix)
