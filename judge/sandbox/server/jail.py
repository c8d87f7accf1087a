"""The slot's jail: the chosen isolation tier (`judge.sandbox.server.tiers`) set up once in the slot server,
and what each execution gets from it (limits, the children's preparation, the sweep afterwards).
"""

from __future__ import annotations

import os
import signal
from typing import Any

from judge.sandbox.errors import CleanupError, JailError
from judge.sandbox.kernel import cgroups, coredump, landlock, namespaces, seccomp
from judge.sandbox.kernel.cpushare import SlotCpu, cpu_group_path
from judge.sandbox.lazylog import get_logger
from judge.sandbox.limits import Limits
from judge.sandbox.server import mounts
from judge.sandbox.server.execute import ExecOutcome
from judge.sandbox.server.files.cleanup import remove_entry, remove_tree
from judge.sandbox.server.tiers import NS_FLAGS, child_env, choose_tier, read_paths
from judge.sandbox.server.tiers import available_tiers as available_tiers  # re-exported: imported from here
from judge.sandbox.zygote.child import ChildPrep

logger = get_logger('judge.sandbox.server.jail')

NPROC_SLACK = 8
WORK_TMPFS_MB = 256
WORK_TMPFS_INODES = 65536
"""Entries in the slot's work space: bounds what the clean-up after an execution may have to remove."""


class Jail:
    """Per-slot isolation state, prepared once when the slot server starts."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.slot = int(config.get('slot', 0))
        self.allow_unsafe = bool(config.get('allow_unsafe', False))
        self.work_root = os.path.realpath(str(config.get('work_root', '/tmp/judge-work')))
        self.work_base = os.path.join(self.work_root, f'slot{self.slot}')
        self.hold_dir = os.path.join(self.work_base, 'space')
        """Where the namespaces tier mounts the small tmpfs that holds the executions' own ones."""
        self.space_dir = os.path.join(self.hold_dir, 's')
        """Where the namespaces tier mounts each execution's own tmpfs (`judge.sandbox.server.files.spaces`)."""
        self.shm_dir = os.path.join(self.space_dir, 'shm')
        """Where the namespaces tier's ``/dev/shm`` leads: a directory of the execution's tmpfs."""
        self.last_pid_fd = -1
        """Sets the slot's pid namespace's last pid (namespaces tier; -1: none)."""
        self.extra_env = {str(k): str(v) for k, v in (config.get('env') or {}).items()}
        self.memory_mb = int(config['memory_mb'])
        """The memory cgroup's limit, MiB (`SlotConfig.memory_mb`; each execution sets its own, `effective_limits`)."""
        self.pids = int(config['pids'])
        """The pids cgroup's bound (`SlotConfig.pids`)."""
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
        self.tier = choose_tier(str(config.get('tier', 'auto')), self.allow_unsafe)
        self._setup(int(config.get('uid_base', 61000)))
        self.detail['tier'] = self.tier
        logger.info('slot %d: isolation tier %s (%s)', self.slot, self.tier, self.detail)

    def _setup(self, uid_base: int) -> None:
        if self.tier == 'none':
            self._prepare_work_base()
            return
        self.uid = self.gid = uid_base + self.slot
        self.detail['uid'] = self.uid
        self._check_core_pattern()
        if self.tier in ('namespaces', 'landlock'):
            self._make_cgroups()
        if self.tier == 'namespaces':
            self._enter_namespaces()
        self._prepare_work_base()
        if self.tier in ('namespaces', 'landlock'):
            self._mount_work_tmpfs()
            private = self.tier == 'namespaces'  # its /proc and /dev/shm are the slot's own
            # the namespaces tier's /dev/shm is a link into the work space (`judge.sandbox.server.files.spaces`)
            writable = [self.work_base, '/dev/null'] + ([] if private else ['/dev/shm'])
            readable = read_paths(self.extra_read) + (['/proc'] if private else [])
            self.landlock_fd = landlock.build_ruleset(readable, writable)
            self.detail['landlock_abi'] = landlock.abi_version()
        try:
            self.seccomp_program = seccomp.build_filter()
            self.detail['seccomp'] = True
        except ValueError as e:  # unknown architecture: the namespaces/landlock layers still hold
            logger.warning('no seccomp filter: %s', e)

    def _check_core_pattern(self) -> None:
        """Refuse a host whose ``core_pattern`` hands dumps to a socket: no limit stops those
        (`judge.sandbox.kernel.coredump`); file and pipe patterns are stopped by the core limit of 1."""
        try:
            kind = coredump.host_pattern_kind()
        except OSError as e:
            logger.warning('slot %d: cannot read %s (%s)', self.slot, coredump.CORE_PATTERN, e)
            return
        self.detail['core_pattern'] = kind
        if kind == 'socket' and not self.allow_unsafe:
            raise JailError(
                'kernel.core_pattern hands core dumps to a socket ("@..."), which no rlimit stops: a crashing '
                "submission would reach the host's handler; set a file or pipe pattern (or allow unsafe tiers)"
            )

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
        self.last_pid_fd = mounts.enter_filesystem(
            self.work_base,
            list(dict.fromkeys([*keep, *self.keep_writable])),
            [*self.keep_writable, *self.extra_read],
            self.hide,
            self.shm_dir,
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
        return limits._replace(use_rlimit_as=False)

    @property
    def nproc_slack(self) -> int:
        """How far ``RLIMIT_NPROC`` may exceed the pids limit: with a pids cgroup, the cgroup must
        refuse first, so that the refusal is counted (see `limits_hit`)."""
        return NPROC_SLACK if self.cgroup is not None else 0

    def _limit_counts(self) -> tuple[int, int]:
        assert self.cgroup is not None
        return self.cgroup.oom_kills(), self.cgroup.fork_refusals()

    def child_env(self) -> dict[str, str]:
        """The programs' environment (`judge.sandbox.server.tiers.child_env`) with the configured extras."""
        return child_env(self.extra_env)

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
