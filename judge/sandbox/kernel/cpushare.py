"""A slot's share of the CPUs: its own group in the cpu controller (cgroup v1 or v2).

Without it the scheduler shares CPU time per *thread*: a submission running forty busy processes
gets forty shares and its neighbour's honest program one.  With one group per slot, every slot has
the same weight whatever its number of processes, and a quota (``cpus`` CPUs per period) caps the
whole group, so a submission's CPU time over all its processes is bounded by its wall-clock limit
times ``cpus``.

The warm parent (zygote) joins the group once and every child it forks inherits it: joining costs
the executions nothing.  Layout: v1 ``<cpu>/judge-slotN`` (and ``<cpuacct>/judge-slotN`` for usage
accounting when cpuacct is mounted apart), at the top: under a common parent all slots together
would weigh as much as one other process of the host; v2 ``judge/slotN`` holds the quota, with the
zygote in ``judge/slotN/parent`` and the executions' memory and pids limits in ``judge/slotN/run``.
"""

from __future__ import annotations

import os

from judge.sandbox.kernel.cgroups import Hierarchy, detect, enable_v2_controllers, write_control
from judge.sandbox.lazylog import get_logger

logger = get_logger('judge.sandbox.kernel.cpushare')

PERIOD_US = 100_000
V2_PARENT = 'parent'
"""v2: the leaf of the slot's group the warm parent lives in (v2 forbids processes in inner groups)."""


def cpu_group_path(hierarchy: Hierarchy, slot: int) -> str:
    """Where slot ``slot``'s cpu group lives below the controller's root (see the module's doc)."""
    return f'judge/slot{slot}' if hierarchy.version == 2 else f'judge-slot{slot}'


class SlotCpu:
    """The cpu-controller group of one slot, ``<root>/<path>``."""

    def __init__(self, path: str, *, cpus: float, hierarchy: Hierarchy | None = None) -> None:
        found = hierarchy if hierarchy is not None else detect()
        if found is None or found.cpu_root is None:
            raise OSError('no cgroup hierarchy with the cpu controller')
        self.version = found.version
        self.cpus = cpus
        self.path = path
        self.root = found.cpu_root
        self.cpu_dir = os.path.join(found.cpu_root, path)
        roots = [found.cpu_root]
        if self.version == 1:
            joined = [self.cpu_dir]
            if found.cpuacct_root is not None and found.cpuacct_root != found.cpu_root:
                joined.append(os.path.join(found.cpuacct_root, path))
                roots.append(found.cpuacct_root)
            self.usage_file = os.path.join(joined[-1], 'cpuacct.usage') if found.cpuacct_root else None
        else:
            joined = [os.path.join(self.cpu_dir, V2_PARENT)]
            self.usage_file = os.path.join(self.cpu_dir, 'cpu.stat')
        self.joined_dirs = joined
        self.roots = roots

    @staticmethod
    def available(hierarchy: Hierarchy | None = None) -> bool:
        """Whether this host (as root) lets us make per-slot cpu groups."""
        found = hierarchy if hierarchy is not None else detect()
        return found is not None and found.cpu_root is not None and os.access(found.cpu_root, os.W_OK)

    def create(self) -> None:
        """Create the group(s) and set the quota; safe to call again."""
        if self.version == 2:
            enable_v2_controllers(self.root, os.path.dirname(self.path), ('cpu',))
            for path in self.joined_dirs:
                os.makedirs(path, mode=0o755, exist_ok=True)
            quota = 'max' if self.cpus <= 0 else str(int(self.cpus * PERIOD_US))
            write_control(os.path.join(self.cpu_dir, 'cpu.max'), f'{quota} {PERIOD_US}')
            return
        for path in self.joined_dirs:
            os.makedirs(path, mode=0o755, exist_ok=True)
        write_control(os.path.join(self.cpu_dir, 'cpu.cfs_period_us'), str(PERIOD_US))
        quota_us = -1 if self.cpus <= 0 else int(self.cpus * PERIOD_US)
        write_control(os.path.join(self.cpu_dir, 'cpu.cfs_quota_us'), str(quota_us))

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files the warm parent writes itself into."""
        return [os.path.join(path, 'cgroup.procs') for path in self.joined_dirs]

    def usage_s(self) -> float | None:
        """CPU seconds used by the group so far (None when the kernel does not account it)."""
        if self.usage_file is None:
            return None
        try:
            with open(self.usage_file, encoding='ascii') as f:
                text = f.read()
        except OSError:
            return None
        if self.version == 1:
            return int(text) / 1e9
        for line in text.splitlines():
            key, _, value = line.partition(' ')
            if key == 'usage_usec':
                return int(value) / 1e6
        return None

    def quota_cpus(self) -> float | None:
        """The group's quota as read back from the kernel, in CPUs (None: unlimited)."""
        if self.version == 2:
            with open(os.path.join(self.cpu_dir, 'cpu.max'), encoding='ascii') as f:
                quota, period = f.read().split()
            return None if quota == 'max' else int(quota) / int(period)
        with open(os.path.join(self.cpu_dir, 'cpu.cfs_quota_us'), encoding='ascii') as f:
            quota_us = int(f.read())
        with open(os.path.join(self.cpu_dir, 'cpu.cfs_period_us'), encoding='ascii') as f:
            period_us = int(f.read())
        return None if quota_us < 0 else quota_us / period_us
