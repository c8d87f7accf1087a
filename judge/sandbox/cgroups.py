"""Per-slot memory + pids cgroups for cgroup v1 and v2 (sandbox.md §7).

The hierarchy is detected from /proc/self/mountinfo: cgroup v2 when a cgroup2 mount offers both the
memory and pids controllers, otherwise v1 with separate (or co-mounted) ``memory`` and ``pids``
hierarchies.  A slot's cgroups are created once; per execution the forked child only calls `join`
and the slot server sweeps the group with `kill_all`.  Clean-up never signals anything but the pids
listed in the slot's own ``cgroup.procs`` (never ``kill(-1)``).
"""

from __future__ import annotations

import errno
import functools
import os
import re
import signal
import time
from typing import NamedTuple

from judge.sandbox.lazylog import get_logger

logger = get_logger('judge.sandbox.cgroups')

MOUNTINFO = '/proc/self/mountinfo'
_SLEEP_S = 0.005
_NAME_RE = re.compile(r'[A-Za-z0-9_.-]+')


class Hierarchy(NamedTuple):
    """Where the controllers live (the same directory on v2 or when co-mounted); None: not there."""

    version: int
    memory_root: str
    pids_root: str
    cpu_root: str | None = None
    cpuacct_root: str | None = None
    """v1 only: CPU usage accounting (``cpuacct.usage``); on v2 ``cpu.stat`` has it."""


def _unescape(field: str) -> str:
    return re.sub(r'\\([0-7]{3})', lambda m: chr(int(m.group(1), 8)), field)


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fs type, super options) of every mount in /proc/self/mountinfo."""
    result = []
    with open(MOUNTINFO, encoding='utf-8', errors='surrogateescape') as f:
        for line in f:
            left, sep, right = line.partition(' - ')
            fields, tail = left.split(), right.split()
            if sep and len(fields) >= 5 and len(tail) >= 3:
                result.append((_unescape(fields[4]), tail[0], set(tail[2].split(','))))
    return result


def _read(path: str) -> str:
    with open(path, encoding='ascii') as f:
        return f.read()


class _HeldFile:
    """A cgroup file kept open and re-read from offset 0, which regenerates it.

    For files read after every execution; opening the file each time cost ten times more (~23 us vs
    ~2 us).  Not for ``cgroup.procs``: cgroup v1 keeps serving an open file's first pid list.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    def read(self) -> str:
        """The file's current content (reopened once if the held descriptor went stale)."""
        for attempt in (0, 1):
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                return os.pread(self._fd, 65536, 0).decode('ascii')
            except OSError:
                self.close()
                if attempt:
                    raise
        raise AssertionError('unreachable')

    def close(self) -> None:
        """Close the held descriptor (the next read reopens the file)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def write_control(path: str, value: str) -> None:
    """Write ``value`` to a cgroup control file."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def enable_v2_controllers(root: str, path: str, controllers: tuple[str, ...]) -> None:
    """cgroup v2: create ``root/path`` and enable ``controllers`` for the children of it and of every
    directory above it, down from ``root``."""
    current = root
    for part in ['', *path.split('/')]:
        current = os.path.join(current, part) if part else current
        os.makedirs(current, mode=0o755, exist_ok=True)
        control = os.path.join(current, 'cgroup.subtree_control')
        if not set(controllers) <= set(_read(control).split()):
            write_control(control, ' '.join(f'+{c}' for c in controllers))


@functools.cache
def detect() -> Hierarchy | None:
    """Find a hierarchy with memory and pids controllers, preferring v2 at /sys/fs/cgroup."""
    mounts = _mounts()
    v2 = sorted((mp for mp, fstype, _ in mounts if fstype == 'cgroup2'), key=lambda mp: mp != '/sys/fs/cgroup')
    for mount_point in v2:
        try:
            controllers = set(_read(os.path.join(mount_point, 'cgroup.controllers')).split())
        except OSError:
            continue
        if {'memory', 'pids'} <= controllers:
            return Hierarchy(2, mount_point, mount_point, mount_point if 'cpu' in controllers else None)
    v1 = {ctrl: mp for mp, fstype, opts in reversed(mounts) if fstype == 'cgroup' for ctrl in opts}
    if 'memory' in v1 and 'pids' in v1:
        return Hierarchy(1, v1['memory'], v1['pids'], v1.get('cpu'), v1.get('cpuacct'))
    return None


class SlotCgroup:
    """The memory + pids cgroup(s) of one worker slot: ``<root>/<parent>/<name>`` in each hierarchy."""

    def __init__(self, name: str, *, memory_mb: int, pids_max: int, parent: str = 'judge') -> None:
        for part in (name, *parent.split('/')):
            if not _NAME_RE.fullmatch(part) or part in ('.', '..'):
                raise ValueError(f'bad cgroup name component {part!r}')
        hierarchy = detect()
        if hierarchy is None:
            raise OSError(errno.ENOENT, 'no cgroup hierarchy with memory and pids controllers')
        self.name = name
        self.parent = parent
        self.memory_mb = memory_mb
        self.pids_max = pids_max
        self.version = hierarchy.version
        self.roots = list(dict.fromkeys((hierarchy.memory_root, hierarchy.pids_root)))
        self.memory_dir = os.path.join(hierarchy.memory_root, parent, name)
        self.pids_dir = os.path.join(hierarchy.pids_root, parent, name)
        self.paths = list(dict.fromkeys((self.memory_dir, self.pids_dir)))
        self._procs_files = [os.path.join(p, 'cgroup.procs') for p in self.paths]
        oom_file = 'memory.events' if self.version == 2 else 'memory.oom_control'
        self._oom = _HeldFile(os.path.join(self.memory_dir, oom_file))
        self._tasks = _HeldFile(os.path.join(self.pids_dir, 'pids.current'))
        """How many tasks the pids cgroup holds: unlike a pid list, a counter is cheap to re-read."""
        self._pids_events = _HeldFile(os.path.join(self.pids_dir, 'pids.events'))

    def __repr__(self) -> str:
        return f'SlotCgroup({self.name!r}, v{self.version}, memory_mb={self.memory_mb}, pids_max={self.pids_max})'

    @staticmethod
    def available() -> bool:
        """True when running as root with a writable hierarchy offering memory and pids."""
        if os.geteuid() != 0:
            return False
        hierarchy = detect()
        if hierarchy is None:
            return False
        return all(os.access(root, os.W_OK) for root in (hierarchy.memory_root, hierarchy.pids_root))

    def create(self) -> None:
        """Create the cgroup(s) and apply the limits; safe to call again."""
        if self.version == 2:
            self._enable_v2_controllers()
        for path in self.paths:
            os.makedirs(path, mode=0o755, exist_ok=True)
        if self.version == 1:
            swappiness = os.path.join(self.memory_dir, 'memory.swappiness')
            if os.path.exists(swappiness):
                try:
                    write_control(swappiness, '0')
                except OSError as exc:
                    logger.debug('cannot set %s: %s', swappiness, exc)
        else:
            swap_max = os.path.join(self.memory_dir, 'memory.swap.max')
            if os.path.exists(swap_max):
                write_control(swap_max, '0')
        self.set_memory_mb(self.memory_mb)
        write_control(os.path.join(self.pids_dir, 'pids.max'), str(self.pids_max))
        logger.debug('created %r at %s', self, self.paths)

    def _enable_v2_controllers(self) -> None:
        enable_v2_controllers(self.roots[0], self.parent, ('memory', 'pids'))

    def set_memory_mb(self, memory_mb: int) -> None:
        """Change the memory limit (swap included, i.e. no swap)."""
        limit = str(memory_mb * 1024 * 1024)
        if self.version == 2:
            write_control(os.path.join(self.memory_dir, 'memory.max'), limit)
        else:
            mem = os.path.join(self.memory_dir, 'memory.limit_in_bytes')
            memsw = os.path.join(self.memory_dir, 'memory.memsw.limit_in_bytes')
            if not os.path.exists(memsw):
                write_control(mem, limit)
            elif int(limit) >= int(_read(mem)):  # memsw must stay >= mem: raise memsw first
                write_control(memsw, limit)
                write_control(mem, limit)
            else:
                write_control(mem, limit)
                write_control(memsw, limit)
        self.memory_mb = memory_mb

    def join(self, pid: int = 0) -> None:
        """Move *pid* (0: the caller) into the slot's cgroup(s).  Meant for a freshly forked child."""
        data = str(pid).encode()
        for path in self._procs_files:
            fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` file of each of the slot's cgroups (one on v2)."""
        return list(self._procs_files)

    def procs(self) -> list[int]:
        """Pids currently in the slot's cgroup(s), sorted, without duplicates."""
        pids: set[int] = set()
        for path in self._procs_files:  # reopened each time: v1 caches a held file's pid list
            try:
                pids.update(int(tok) for tok in _read(path).split())
            except FileNotFoundError:
                continue
        pids.discard(0)  # v2 prints 0 for tasks outside our pid namespace
        return sorted(pids)

    def tasks(self) -> int:
        """How many tasks (threads, and zombies not yet reaped) the slot's pids cgroup holds."""
        return int(self._tasks.read().strip() or 0)

    def sweep(self) -> int:
        """SIGKILL every process listed in the slot's cgroup(s) once; returns how many were listed."""
        pids = self.procs()
        own_pid = os.getpid()
        for pid in pids:
            if pid <= 0 or pid == own_pid:  # never signal a process group or ourselves
                continue
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(pids)

    def kill_all(self, timeout_s: float = 1.0) -> None:
        """SIGKILL everything in the slot's cgroup(s) and wait (at most *timeout_s*) until none is listed.

        Zombies are no longer listed but still count in `tasks` until their parent reaps them.
        """
        # Usually the execution's processes are all gone and reaped already: a held counter says so
        # in ~2 us, where building the pid lists of both hierarchies takes ~100 us.  Every process of
        # the slot is in the pids cgroup (children join it before running anything of the user's).
        try:
            if self.tasks() == 0:
                return
        except OSError:  # no pids cgroup (yet, or any more): the pid lists below tell
            pass
        deadline = time.monotonic() + timeout_s
        kill_file = os.path.join(self.memory_dir, 'cgroup.kill')
        if self.version == 2 and os.path.exists(kill_file):
            write_control(kill_file, '1')
        while self.sweep():
            if time.monotonic() >= deadline:
                logger.warning('%r: processes left after kill_all', self)
                return
            time.sleep(_SLEEP_S)

    def oom_kills(self) -> int:
        """How many processes the OOM killer has killed in this cgroup so far."""
        for line in self._oom.read().splitlines():
            key, _, value = line.partition(' ')
            if key == 'oom_kill':
                return int(value)
        return 0

    def fork_refusals(self) -> int:
        """How many forks (or new threads) the pids limit has refused in this cgroup so far."""
        for line in self._pids_events.read().splitlines():
            key, _, value = line.partition(' ')
            if key == 'max':
                return int(value)
        return 0

    def remove(self, timeout_s: float = 1.0) -> None:
        """Kill everything inside, then delete the cgroup directories (missing ones are ignored)."""
        self.kill_all(timeout_s)
        self._oom.close()
        self._tasks.close()
        self._pids_events.close()
        deadline = time.monotonic() + timeout_s
        for path in self.paths:
            while True:
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() >= deadline:
                        raise
                    time.sleep(_SLEEP_S)
