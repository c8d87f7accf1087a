"""The slot's jail: which isolation tier is active and what each execution gets from it.

Tiers, strongest first (see the README's sandbox section):

* ``namespaces``: the slot server lives in its own net/ipc/uts/mount/pid namespaces, with a
  read-only root, a fresh ``/proc``, the project and home directories hidden, and private
  size-limited tmpfs work and ``/dev/shm`` dirs; plus everything of ``landlock``.
* ``landlock``: a per-slot uid, memory+pids cgroups, Landlock (files, TCP, signals), seccomp.
* ``uid``: a per-slot uid, rlimits (``RLIMIT_AS`` for memory), seccomp, process-group and uid sweep.
* ``none``: the worker's own uid, rlimits only.  Refused unless ``allow_unsafe`` is set.

``auto`` picks the strongest tier this host permits; asking for a tier the host cannot provide
is an error, never a silent downgrade.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import sys
from typing import Any

from judge.sandbox import cgroups, landlock, namespaces, seccomp
from judge.sandbox.child import ChildPrep
from judge.sandbox.execute import ExecOutcome
from judge.sandbox.lazylog import get_logger
from judge.sandbox.limits import Limits

logger = get_logger('judge.sandbox.jail')

TIERS = ('namespaces', 'landlock', 'uid', 'none')
SAFE_PATH = '/usr/local/bin:/usr/bin:/bin'
NS_FLAGS = (
    namespaces.CLONE_NEWNS
    | namespaces.CLONE_NEWPID
    | namespaces.CLONE_NEWNET
    | namespaces.CLONE_NEWIPC
    | namespaces.CLONE_NEWUTS
)
READ_PATHS = (
    '/usr',
    '/lib',
    '/lib64',
    '/lib32',
    '/bin',
    '/sbin',
    '/etc/ld.so.cache',
    '/etc/localtime',
    '/etc/alternatives',
    '/etc/passwd',
    '/etc/group',
    '/etc/nsswitch.conf',
    '/sys/devices/system/cpu',
    '/dev/null',
    '/dev/zero',
    '/dev/urandom',
    '/dev/random',
    '/opt',
)
HIDDEN_DIRS = ('/root', '/home', '/var/lib', '/var/log', '/var/cache', '/srv', '/mnt', '/media', '/run', '/boot')
SCRATCH_DIRS = ('/tmp', '/var/tmp')
PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
THREAD_VARS = (
    'OMP_NUM_THREADS',
    'OPENBLAS_NUM_THREADS',
    'MKL_NUM_THREADS',
    'BLIS_NUM_THREADS',
    'VECLIB_MAXIMUM_THREADS',
    'NUMEXPR_NUM_THREADS',
    'NUMBA_NUM_THREADS',
)
"""Thread-count variables of BLAS/OpenMP/numexpr/numba, all set to 1 in the programs' environment."""
WORK_TMPFS_MB = 256
SHM_TMPFS_MB = 16


class JailError(RuntimeError):
    """The requested isolation cannot be provided on this host."""


def available_tiers() -> list[str]:
    """Tiers this process could run, strongest first."""
    tiers = []
    if os.getuid() == 0:
        if cgroups.SlotCgroup.available() and landlock.abi_version() >= 1:
            if namespaces.probe_unshare(NS_FLAGS):
                tiers.append('namespaces')
            tiers.append('landlock')
        tiers.append('uid')
    tiers.append('none')
    return tiers


class Jail:
    """Per-slot isolation state, prepared once when the slot server starts."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.slot = int(config.get('slot', 0))
        self.allow_unsafe = bool(config.get('allow_unsafe', False))
        self.work_root = os.path.realpath(str(config.get('work_root', '/tmp/judge-work')))
        self.work_base = os.path.join(self.work_root, f'slot{self.slot}')
        self.extra_env = {str(k): str(v) for k, v in (config.get('env') or {}).items()}
        self.memory_mb = int(config.get('memory_mb', 256))
        self.pids = int(config.get('pids', 64))
        self.keep_writable = [str(p) for p in config.get('keep_writable') or []]
        self.extra_read = [str(p) for p in config.get('read_paths') or []]
        self.hide = [str(p) for p in config.get('hide') or []]
        self.preload = [str(m) for m in config.get('preload') or []]
        self.uid: int | None = None
        self.gid: int | None = None
        self.cgroup: cgroups.SlotCgroup | None = None
        self.landlock_fd: int | None = None
        self.seccomp_program: bytes | None = None
        self.detail: dict[str, Any] = {}
        self._oom_before: int | None = None
        self.tier = self._choose(str(config.get('tier', 'auto')))
        self._setup(int(config.get('uid_base', 61000)))
        self.detail['tier'] = self.tier
        logger.info('slot %d: isolation tier %s (%s)', self.slot, self.tier, self.detail)

    def _choose(self, requested: str) -> str:
        if requested not in ('auto', *TIERS):
            raise JailError(f'unknown sandbox tier {requested!r}; choose one of auto, {", ".join(TIERS)}')
        tiers = available_tiers()
        if requested == 'auto':
            requested = tiers[0]
        if requested not in tiers:
            raise JailError(f'sandbox tier {requested!r} is not available here (available: {", ".join(tiers)})')
        if requested == 'none' and not self.allow_unsafe:
            raise JailError(
                'no isolation is available (not root): refusing to run untrusted code; '
                'set JUDGE_ALLOW_UNSAFE=1 to run it anyway on a trusted machine'
            )
        return requested

    def _setup(self, uid_base: int) -> None:
        if self.tier == 'none':
            self._prepare_work_base()
            return
        self.uid = self.gid = uid_base + self.slot
        self.detail['uid'] = self.uid
        if self.tier in ('namespaces', 'landlock'):
            self.cgroup = cgroups.SlotCgroup(f'slot{self.slot}', memory_mb=self.memory_mb, pids_max=self.pids)
            self.cgroup.create()
            self.detail['cgroup'] = f'v{self.cgroup.version}'
        if self.tier == 'namespaces':
            self._enter_namespaces()
        self._prepare_work_base()
        if self.tier in ('namespaces', 'landlock'):
            self._mount_work_tmpfs()
            private = self.tier == 'namespaces'  # its /proc and /dev/shm are the slot's own
            writable = [self.work_base, '/dev/null'] + (['/dev/shm'] if private else [])
            readable = self._read_paths() + (['/proc'] if private else [])
            self.landlock_fd = landlock.build_ruleset(readable, writable)
            self.detail['landlock_abi'] = landlock.abi_version()
        try:
            self.seccomp_program = seccomp.build_filter()
            self.detail['seccomp'] = True
        except ValueError as e:  # unknown architecture: the namespaces/landlock layers still hold
            logger.warning('no seccomp filter: %s', e)

    def _read_paths(self) -> list[str]:
        prefixes = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}
        jdk_conf = sorted(glob.glob('/etc/java-*-openjdk'))  # Debian's JDK config (java.security, jvm.cfg)
        return [*READ_PATHS, *jdk_conf, *self.extra_read, *sorted(p for p in prefixes if p not in ('/', '/usr'))]

    def _enter_namespaces(self) -> None:
        """Become pid 1 of fresh namespaces with a read-only view of the host."""
        namespaces.unshare(NS_FLAGS)
        pid = os.fork()
        if pid:  # the outer process only relays the inner server's fate
            _, status = os.waitpid(pid, 0)
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
        namespaces.set_pdeathsig(signal.SIGKILL)
        namespaces.make_mounts_private()
        os.makedirs(self.work_base, exist_ok=True)
        namespaces.mount_proc('/proc')
        keep = [*self.cgroup.roots] if self.cgroup is not None else []
        for path in self.keep_writable:  # e.g. the compile cache, written by this (root) server only
            os.makedirs(path, mode=0o755, exist_ok=True)
            if not os.path.ismount(path):
                namespaces.mount(path, path, None, namespaces.MS_BIND)
        # Device nodes stay usable (/dev/null, /dev/urandom); DAC keeps the rest root-only.
        namespaces.remount_readonly_recursive('/', keep_writable=[*keep, *self.keep_writable], nodev=False)
        # The interpreter's prefixes (the submission runtime) stay visible, read-only, wherever they
        # live; the directories around them are hidden all the same.
        prefixes = {sys.prefix, sys.base_prefix} - {'/', '/usr'}
        visible = sorted({self.work_base, *self.keep_writable, *self.extra_read, *prefixes})
        for path in (*HIDDEN_DIRS, PROJECT_DIR, *self.hide):
            if os.path.isdir(path):
                _hide_keeping(path, [p for p in visible if _inside(p, path)])
        # Scratch space the host cannot see: empty, so no host Unix socket or file is reachable.
        for path in SCRATCH_DIRS:
            if os.path.isdir(path):
                _hide_keeping(path, [p for p in visible if _inside(p, path)])
        os.makedirs(self.work_base, exist_ok=True)
        namespaces.mount_tmpfs('/dev/shm', SHM_TMPFS_MB, mode=0o1777)

    def _prepare_work_base(self) -> None:
        os.makedirs(self.work_root, mode=0o711, exist_ok=True)
        if self.uid is not None:
            path = self.work_root
            while True:
                if not os.stat(path).st_mode & 0o001:
                    raise JailError(f'work root {self.work_root!r}: {path!r} is not searchable by the slot uids')
                if path == '/':
                    break
                path = os.path.dirname(path)
        if os.path.ismount(self.work_base) and self.tier != 'namespaces':
            namespaces.umount2(self.work_base, namespaces.MNT_DETACH)
        if os.path.lexists(self.work_base):
            shutil.rmtree(self.work_base, ignore_errors=True)
        os.makedirs(self.work_base, 0o711, exist_ok=True)

    def _mount_work_tmpfs(self) -> None:
        """A size-limited tmpfs as the slot's work space, so no execution can fill the host's disk."""
        try:
            namespaces.mount_tmpfs(self.work_base, WORK_TMPFS_MB, mode=0o711)
            self.detail['work_tmpfs_mb'] = WORK_TMPFS_MB
        except OSError as e:  # e.g. no CAP_SYS_ADMIN in a container: files stay bounded per file only
            logger.warning('slot %d: no tmpfs work dir (%s)', self.slot, e)

    def effective_limits(self, limits: Limits) -> Limits:
        """Limits as this tier enforces them: the memory cgroup replaces ``RLIMIT_AS``."""
        if self.cgroup is None:
            return limits
        if limits.memory_mb != self.memory_mb:
            self.cgroup.set_memory_mb(limits.memory_mb)
            self.memory_mb = limits.memory_mb
        if self._oom_before is None:  # afterwards, the count `memory_exceeded` read last time
            self._oom_before = self.cgroup.oom_kills()
        return Limits.from_dict({**limits.to_dict(), 'use_rlimit_as': False})

    def child_env(self) -> dict[str, str]:
        """A clean environment: no secrets (``REDIS_URI``...) from the worker ever reach user code.

        ``HOME`` and ``TMPDIR`` are added by each child: they are its work dir.
        """
        env = {
            'PATH': SAFE_PATH,
            'LANG': 'C.UTF-8',
            'LC_ALL': 'C.UTF-8',
            'PYTHONDONTWRITEBYTECODE': '1',
            'PYTHONIOENCODING': 'utf-8',
            # One BLAS/OpenMP thread per submission: the slot's CPU share is one core.
            **dict.fromkeys(THREAD_VARS, '1'),
        }
        env.update(self.extra_env)
        return env

    def child_prep(self) -> ChildPrep:
        """The tier's per-child steps (uid, cgroups, filters)."""
        return ChildPrep(
            uid=self.uid,
            gid=self.gid,
            cgroup_procs=self.cgroup.procs_files if self.cgroup is not None else [],
            landlock_fd=self.landlock_fd,
            seccomp_program=self.seccomp_program,
            env=self.child_env(),
            preload=self.preload,
        )

    def memory_exceeded(self, outcome: ExecOutcome) -> bool:
        """Whether the execution was OOM-killed by the slot's memory cgroup."""
        if self.cgroup is None:
            return False
        before, self._oom_before = self._oom_before, self.cgroup.oom_kills()
        return before is not None and self._oom_before > before

    def forget_oom_count(self) -> None:
        """After an execution that `memory_exceeded` did not see: re-read the count next time."""
        self._oom_before = None

    def kill_all(self) -> None:
        """Kill every process the slot's executions may have left behind."""
        if self.cgroup is not None:
            self.cgroup.kill_all()
        elif self.uid is not None and os.getuid() == 0:
            _kill_uid(self.uid)
        if self.tier == 'namespaces':
            _empty_dir('/dev/shm')


def _hide_keeping(path: str, keep: list[str]) -> None:
    """Cover ``path`` with an empty tmpfs, then bind the directories in ``keep`` back at their places."""
    handles = {p: os.open(p, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) for p in keep if os.path.isdir(p)}
    try:
        if handles:
            namespaces.mount_tmpfs(path, 1, mode=0o755)
            for target, fd in handles.items():
                os.makedirs(target, mode=0o755, exist_ok=True)
                namespaces.mount(f'/proc/self/fd/{fd}', target, None, namespaces.MS_BIND | namespaces.MS_REC)
            namespaces.mount(
                None,
                path,
                None,
                namespaces.MS_REMOUNT | namespaces.MS_RDONLY | namespaces.MS_NOSUID | namespaces.MS_NODEV,
            )
        else:
            namespaces.hide_path(path)
    finally:
        for fd in handles.values():
            os.close(fd)


def _inside(path: str, parent: str) -> bool:
    parent = parent.rstrip('/') + '/'
    return (path.rstrip('/') + '/').startswith(parent)


def _empty_dir(path: str) -> None:
    try:
        names = os.listdir(path)
    except OSError:
        return
    for name in names:
        full = os.path.join(path, name)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full, ignore_errors=True)
        else:
            try:
                os.unlink(full)
            except OSError:
                pass


def _kill_uid(uid: int) -> None:
    """SIGKILL every process of ``uid`` from a helper that has become ``uid`` first.

    ``kill(-1)`` reaches only processes the caller may signal; as the slot's own non-root uid
    that is exactly the slot's leftovers (setsid daemons included).  The helper checks it is
    no longer root before it sends anything: as root ``kill(-1)`` would kill the machine.
    """
    if uid <= 0:
        return
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            if os.getuid() != 0 and os.geteuid() != 0 and os.getuid() == uid:
                os.kill(-1, signal.SIGKILL)
        except BaseException:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
