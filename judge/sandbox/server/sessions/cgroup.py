"""Each live session's own cgroups: memory, pids, CPU quota and the freezer (cgroup v1 or v2).

A session holds no slot and must burn no CPU between its cells, so the host freezes its cgroup after
every operation and thaws it for the next (v1 ``freezer.state``, v2 ``cgroup.freeze``).  Layout:
v1 ``<memory|pids|freezer>/judge/sess<N>/<name>`` and ``<cpu>/judge-sess<N>/<name>`` (cpuacct too
when mounted apart); v2 ``judge/sess<N>/<name>`` with the memory, pids and cpu controllers.
Creating a group costs several directory and file writes per hierarchy, so `Groups` keeps a few ready
(`Groups.refill`, off any request's path) and hands them out.  Clean-up never signals anything but the
pids listed in the session's own ``cgroup.procs``.
"""

from __future__ import annotations

import errno
import os
import signal
import threading
import time

from judge.sandbox.kernel.hierarchy import MOUNTINFO, detect, enable_v2_controllers, read_text, write_control

_POLL_S = 0.0005
PERIOD_US = 100_000


def _v1_root(controller: str) -> str | None:
    """The mount point of the v1 hierarchy holding ``controller`` (None: not mounted)."""
    with open(MOUNTINFO, encoding='utf-8', errors='surrogateescape') as f:
        for line in f:
            left, _, right = line.partition(' - ')
            tail = right.split()
            if len(tail) >= 3 and tail[0] == 'cgroup' and controller in tail[2].split(','):
                return left.split()[4]
    return None


def mount_roots() -> list[str]:
    """The cgroup mounts the host writes (to keep writable in the ``namespaces`` tier's read-only view)."""
    found = detect()
    if found is None:
        return []
    roots = [found.memory_root, found.pids_root, found.cpu_root, found.cpuacct_root]
    if found.version == 1:
        roots.append(_v1_root('freezer'))
    return sorted({r for r in roots if r})


class Group:
    """One session's cgroups (its directories in each hierarchy)."""

    def __init__(self, name: str, dirs: dict[str, str], version: int) -> None:
        self.name = name
        self.dirs = dirs
        """Controller -> directory (``memory``, ``pids``, ``freezer``, ``cpu``, ``cpuacct``; v2: all one)."""
        self.version = version
        self.memory_mb = 0

    @property
    def _procs(self) -> list[str]:
        return [os.path.join(d, 'cgroup.procs') for d in dict.fromkeys(self.dirs.values())]

    def set_limits(self, memory_mb: int, pids: int, cpus: float) -> None:
        """Memory (swap off), pids and CPU quota."""
        mem, limit = self.dirs['memory'], str(memory_mb * 1024 * 1024)
        if self.version == 2:
            write_control(os.path.join(mem, 'memory.max'), limit)
            if os.path.exists(os.path.join(mem, 'memory.swap.max')):
                write_control(os.path.join(mem, 'memory.swap.max'), '0')
        else:
            memsw = os.path.join(mem, 'memory.memsw.limit_in_bytes')
            order = ['memory.limit_in_bytes', 'memory.memsw.limit_in_bytes']
            if os.path.exists(memsw) and 0 < self.memory_mb < memory_mb:
                order.reverse()  # memsw must stay >= the memory limit
            for name in order:
                if os.path.exists(os.path.join(mem, name)):
                    write_control(os.path.join(mem, name), limit)
        self.set_cpus(cpus)
        write_control(os.path.join(self.dirs['pids'], 'pids.max'), str(pids))
        self.memory_mb = memory_mb

    def set_cpus(self, cpus: float) -> None:
        """The CPU quota alone (``cpus`` <= 0: none)."""
        if self.version == 2:
            write_control(os.path.join(self.dirs['cpu'], 'cpu.max'), f'{_quota(cpus)} {PERIOD_US}')
        elif 'cpu' in self.dirs:
            write_control(os.path.join(self.dirs['cpu'], 'cpu.cfs_quota_us'), _quota(cpus, v1=True))

    def join(self, pid: int) -> None:
        """Move ``pid`` into every hierarchy of the session."""
        for path in self._procs:
            write_control(path, str(pid))

    def pids(self) -> list[int]:
        """Processes in the session's cgroups."""
        found: set[int] = set()
        for path in self._procs:
            try:
                found.update(int(tok) for tok in read_text(path).split())
            except ValueError:
                continue
            except OSError as e:
                if e.errno in (errno.ENOENT, errno.ENODEV):  # the cgroup is gone or going: no process left in it
                    continue
                raise
        found.discard(0)
        return sorted(found)

    def freeze(self, frozen: bool = True, timeout_s: float = 2.0, wait: bool = True) -> bool:
        """Freeze (or thaw) every process of the session; False when the kernel did not finish in time
        (``wait=False``: ask, and return at once)."""
        if self.version == 2:
            write_control(os.path.join(self.dirs['freezer'], 'cgroup.freeze'), '1' if frozen else '0')
            want, path = f'frozen {int(frozen)}', os.path.join(self.dirs['freezer'], 'cgroup.events')
        else:
            state = 'FROZEN' if frozen else 'THAWED'
            write_control(os.path.join(self.dirs['freezer'], 'freezer.state'), state)
            want, path = state, os.path.join(self.dirs['freezer'], 'freezer.state')
        if not wait:
            return True
        deadline = time.monotonic() + timeout_s
        while want not in read_text(path):
            if time.monotonic() > deadline:
                return False
            time.sleep(_POLL_S)
        return True

    def memory_bytes(self) -> int:
        """Memory charged to the session now (0 when unreadable)."""
        name = 'memory.current' if self.version == 2 else 'memory.usage_in_bytes'
        try:
            return int(read_text(os.path.join(self.dirs['memory'], name)))
        except (OSError, ValueError):
            return 0

    def counter(self, controller: str, filename: str, key: str) -> int:
        """A ``key value`` counter of a cgroup file (``oom_kill``, pids ``max``); 0 when absent."""
        try:
            for line in read_text(os.path.join(self.dirs[controller], filename)).splitlines():
                name, _, value = line.partition(' ')
                if name == key:
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def cpu_s(self) -> float:
        """CPU seconds the session used so far (0 when not accounted)."""
        try:
            if self.version == 2:
                return self.counter('cpu', 'cpu.stat', 'usage_usec') / 1e6
            return int(read_text(os.path.join(self.dirs['cpuacct'], 'cpuacct.usage'))) / 1e9
        except (KeyError, OSError, ValueError):
            return 0.0

    def kill(self, timeout_s: float = 2.0) -> None:
        """SIGKILL every listed process, thaw so the kills land, until none is listed."""
        deadline = time.monotonic() + timeout_s
        own = os.getpid()
        while True:
            pids = self.pids()
            for pid in pids:
                if pid > 0 and pid != own:  # never a process group, never ourselves
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            try:
                self.freeze(False, 0.1)
            except OSError:
                pass
            if not pids or time.monotonic() > deadline:
                return
            time.sleep(0.002)

    def remove(self) -> None:
        """Kill what is left and delete the directories (leaves first)."""
        self.kill()
        for path in sorted(set(self.dirs.values()), key=len, reverse=True):
            for _ in range(200):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        raise
                    time.sleep(0.005)


def _quota(cpus: float, v1: bool = False) -> str:
    if cpus <= 0:
        return '-1' if v1 else 'max'
    return str(int(cpus * PERIOD_US))


class Groups:
    """The session cgroups of one host (number ``index``): made ahead, handed out, swept at start."""

    def __init__(self, index: int, memory_mb: int, pids: int, cpus: float, ready: int = 32) -> None:
        found = detect()
        if found is None:
            raise OSError(errno.ENOENT, 'no cgroup hierarchy with memory and pids controllers')
        self.version = found.version
        self.index = index
        self.defaults = (memory_mb, pids, cpus)
        self.ready_target = ready
        if found.version == 2:
            base = os.path.join(found.memory_root, f'judge/sess{index}')
            enable_v2_controllers(found.memory_root, f'judge/sess{index}', ('memory', 'pids', 'cpu'))
            self.bases = {'memory': base, 'pids': base, 'freezer': base, 'cpu': base}
        else:
            freezer, cpu, cpuacct = _v1_root('freezer'), found.cpu_root, found.cpuacct_root
            if freezer is None:
                raise OSError(errno.ENOENT, 'no cgroup v1 freezer hierarchy: sessions cannot be frozen')
            self.bases = {
                'memory': os.path.join(found.memory_root, f'judge/sess{index}'),
                'pids': os.path.join(found.pids_root, f'judge/sess{index}'),
                'freezer': os.path.join(freezer, f'judge/sess{index}'),
            }
            if cpu is not None:
                self.bases['cpu'] = os.path.join(cpu, f'judge-sess{index}')
                if cpuacct is not None:
                    self.bases['cpuacct'] = os.path.join(cpuacct, f'judge-sess{index}')
        self._ready: list[Group] = []
        self._lock = threading.Lock()
        self._serial = 0

    def sweep(self) -> None:
        """Remove every group a previous host of this index left (their processes killed)."""
        for base in set(self.bases.values()):
            os.makedirs(base, mode=0o755, exist_ok=True)
        names = {n for base in self.bases.values() for n in os.listdir(base) if os.path.isdir(os.path.join(base, n))}
        for name in names:
            Group(name, {c: os.path.join(b, name) for c, b in self.bases.items()}, self.version).remove()

    def _make(self) -> Group:
        with self._lock:
            self._serial += 1
            name = f'g{self._serial}-{os.urandom(3).hex()}'
        group = Group(name, {c: os.path.join(b, name) for c, b in self.bases.items()}, self.version)
        for path in dict.fromkeys(group.dirs.values()):
            os.mkdir(path, 0o755)
        if self.version == 1:
            swappiness = os.path.join(group.dirs['memory'], 'memory.swappiness')
            if os.path.exists(swappiness):
                try:
                    write_control(swappiness, '0')
                except OSError:
                    pass
            if 'cpu' in group.dirs:
                write_control(os.path.join(group.dirs['cpu'], 'cpu.cfs_period_us'), str(PERIOD_US))
        group.set_limits(*self.defaults)
        return group

    def take(self, memory_mb: int) -> Group:
        """A ready group (a new one when none is), with ``memory_mb`` as its memory limit."""
        with self._lock:
            group = self._ready.pop() if self._ready else None
        group = group or self._make()
        if memory_mb != group.memory_mb:
            group.set_limits(memory_mb, self.defaults[1], self.defaults[2])
        return group

    def refill(self) -> None:
        """Make groups until `ready_target` wait (call off the requests' path)."""
        while len(self._ready) < self.ready_target:
            group = self._make()
            with self._lock:
                self._ready.append(group)

    def close(self) -> None:
        """Remove the ready groups."""
        with self._lock:
            ready, self._ready = self._ready, []
        for group in ready:
            group.remove()
