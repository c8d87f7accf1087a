"""Per-slot memory + pids cgroups for cgroup v1 and v2 (docs/sandbox.md, "Per-slot cgroups").

The hierarchy comes from `judge.sandbox.kernel.hierarchy.detect`.  A slot's cgroups are created once; per
execution the forked child only calls `join` and the slot server sweeps the group with `kill_all`.
Clean-up never signals anything but the pids listed in the slot's own ``cgroup.procs`` (never
``kill(-1)``).
"""

from __future__ import annotations

import errno
import os
import re
import signal
import time

from judge.sandbox.kernel.hierarchy import HeldFile, Hierarchy, detect, enable_v2_controllers, read_text, write_control
from judge.sandbox.lazylog import get_logger

__all__ = ['Hierarchy', 'SlotCgroup', 'detect', 'enable_v2_controllers', 'write_control']

logger = get_logger('judge.sandbox.kernel.cgroups')

_SLEEP_S = 0.005
_NAME_RE = re.compile(r'[A-Za-z0-9_.-]+')


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
        self._oom = HeldFile(os.path.join(self.memory_dir, oom_file))
        self._tasks = HeldFile(os.path.join(self.pids_dir, 'pids.current'))
        """How many tasks the pids cgroup holds: unlike a pid list, a counter is cheap to re-read."""
        self._pids_events = HeldFile(os.path.join(self.pids_dir, 'pids.events'))

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
            elif int(limit) >= int(read_text(mem)):  # memsw must stay >= mem: raise memsw first
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
                pids.update(int(tok) for tok in read_text(path).split())
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
        # Usually the execution's processes are all gone and reaped already: one pread of a held
        # counter says so, where building the pid lists means opening and parsing a file per
        # hierarchy.  Every process of the slot is in the pids cgroup (children join it before
        # running anything of the user's).
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
