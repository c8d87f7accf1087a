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
import signal
import sys
from typing import Any

from judge.sandbox import cgroups, jailfs, landlock, namespaces, seccomp
from judge.sandbox.child import ChildPrep
from judge.sandbox.cleanup import remove_entry, remove_tree
from judge.sandbox.cpushare import SlotCpu, cpu_group_path
from judge.sandbox.errors import CleanupError, JailError
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
NPROC_SLACK = 8
WORK_TMPFS_MB = 256
WORK_TMPFS_INODES = 65536
"""Entries in the slot's work space: bounds what the clean-up after an execution may have to remove."""


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
        self.scientific = [str(m) for m in config.get('scientific') or []]
        """What the scientific warm parent imports on top of `preload` (empty: no scientific parent)."""
        self.cpus = float(config.get('cpus', 1.0))
        """The slot's CPU quota in CPUs (0: a fair share of the CPUs, no quota)."""
        self.cpu_group = bool(config.get('cpu_group', True))
        """False: no cpu cgroup (processes then share the CPUs one by one; for comparisons)."""
        self.uid: int | None = None
        self.gid: int | None = None
        self.cgroup: cgroups.SlotCgroup | None = None
        self.cpu: SlotCpu | None = None
        self.landlock_fd: int | None = None
        self.seccomp_program: bytes | None = None
        self.detail: dict[str, Any] = {}
        self._counts_before: tuple[int, int] | None = None
        """The cgroups' OOM-kill and refused-fork counts before the current execution."""
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
            self._make_cgroups()
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

    def _make_cgroups(self) -> None:
        hierarchy = cgroups.detect()
        name, parent = f'slot{self.slot}', 'judge'
        if hierarchy is not None and hierarchy.version == 2:  # v2: judge/slotN/{parent,run}, see cpushare
            name, parent = 'run', f'judge/slot{self.slot}'
        self.cgroup = cgroups.SlotCgroup(name, memory_mb=self.memory_mb, pids_max=self.pids, parent=parent)
        self.cgroup.create()
        self.detail['cgroup'] = f'v{self.cgroup.version}'
        if hierarchy is not None and self.cpu_group and SlotCpu.available(hierarchy):
            self.cpu = SlotCpu(cpu_group_path(hierarchy, self.slot), cpus=self.cpus, hierarchy=hierarchy)
            self.cpu.create()
            self.detail['cpus'] = self.cpus if self.cpus > 0 else 'fair share'
        else:
            logger.warning('slot %d: no cpu cgroup controller; slots share the CPUs per process', self.slot)

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
        keep = [*self.cgroup.roots] if self.cgroup is not None else []
        keep += [*self.cpu.roots] if self.cpu is not None else []
        jailfs.enter_filesystem(
            self.work_base,
            list(dict.fromkeys([*keep, *self.keep_writable])),
            [*self.keep_writable, *self.extra_read],
            self.hide,
        )

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
        if os.path.isdir(self.work_base) and not os.path.islink(self.work_base):
            try:
                remove_tree(self.work_base, keep_root=True)
            except CleanupError:
                if self.tier != 'namespaces':
                    raise
                logger.debug('slot %d: the host work dir is read-only here; the tmpfs covers it', self.slot)
        else:
            remove_entry(self.work_base)
        os.makedirs(self.work_base, 0o711, exist_ok=True)

    def _mount_work_tmpfs(self) -> None:
        """A size-limited tmpfs as the slot's work space, so no execution can fill the host's disk."""
        try:
            namespaces.mount_tmpfs(self.work_base, WORK_TMPFS_MB, mode=0o711, inodes=WORK_TMPFS_INODES)
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
        if self._counts_before is None:  # afterwards, the counts `limits_hit` read last time
            self._counts_before = self._limit_counts()
        return Limits.from_dict({**limits.to_dict(), 'use_rlimit_as': False})

    @property
    def nproc_slack(self) -> int:
        """How far ``RLIMIT_NPROC`` may exceed the pids limit: with a pids cgroup, the cgroup must
        refuse first, so that the refusal is counted (see `limits_hit`)."""
        return NPROC_SLACK if self.cgroup is not None else 0

    def _limit_counts(self) -> tuple[int, int]:
        assert self.cgroup is not None
        return self.cgroup.oom_kills(), self.cgroup.fork_refusals()

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
            scientific=self.scientific,
            parent_procs=self.cpu.procs_files if self.cpu is not None else [],
        )

    def limits_hit(self, outcome: ExecOutcome) -> None:
        """Record on ``outcome`` whether the slot's cgroups OOM-killed one of its processes or
        refused it a process or thread (the pids limit)."""
        if self.cgroup is None:
            return
        before, self._counts_before = self._counts_before, self._limit_counts()
        if before is not None:
            outcome.memory_exceeded = self._counts_before[0] > before[0]
            outcome.pids_exceeded = self._counts_before[1] > before[1]

    def forget_counts(self) -> None:
        """After an execution that `limits_hit` did not see: re-read the counts next time."""
        self._counts_before = None

    def kill_all(self) -> None:
        """Kill every process the slot's executions may have left behind (one sweep)."""
        if self.cgroup is not None:
            self.cgroup.sweep()
        elif self.uid is not None and os.getuid() == 0:
            _kill_uid(self.uid)

    def slot_tasks(self) -> int:
        """Tasks of executions still charged to the slot (live or not yet reaped); 0 when it cannot
        tell (no cgroup: the uid sweep is all there is)."""
        if self.cgroup is None:
            return 0
        try:
            return self.cgroup.tasks()
        except OSError:
            return len(self.cgroup.procs())

    def scrub(self) -> None:
        """Remove what executions wrote outside their work dir (the slot's private ``/dev/shm``)."""
        if self.tier == 'namespaces':
            remove_tree('/dev/shm', keep_root=True)


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
