"""The cgroup filesystem: which hierarchy holds the controllers, and reading and writing its files.

`detect` finds the hierarchy from /proc/self/mountinfo: cgroup v2 when a cgroup2 mount offers both
the memory and pids controllers, otherwise v1 with separate (or co-mounted) ``memory`` and ``pids``
hierarchies.  `SlotCgroup` (`judge.sandbox.kernel.cgroups`) and `SlotCpu` (`judge.sandbox.kernel.cpushare`) build
on it.
"""

from __future__ import annotations

import functools
import os
import re
from typing import NamedTuple

MOUNTINFO = '/proc/self/mountinfo'


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


def read_text(path: str) -> str:
    """The whole of a (small, ASCII) cgroup or proc file."""
    with open(path, encoding='ascii') as f:
        return f.read()


class HeldFile:
    """A cgroup file kept open and re-read from offset 0, which regenerates it.

    For files read after every execution: opening the file each time costs an order of magnitude
    more than a pread on the held descriptor.  Not for ``cgroup.procs``: cgroup v1 keeps serving an
    open file's first pid list.
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
        if not set(controllers) <= set(read_text(control).split()):
            write_control(control, ' '.join(f'+{c}' for c in controllers))


@functools.cache
def detect() -> Hierarchy | None:
    """Find a hierarchy with memory and pids controllers, preferring v2 at /sys/fs/cgroup."""
    mounts = _mounts()
    v2 = sorted((mp for mp, fstype, _ in mounts if fstype == 'cgroup2'), key=lambda mp: mp != '/sys/fs/cgroup')
    for mount_point in v2:
        try:
            controllers = set(read_text(os.path.join(mount_point, 'cgroup.controllers')).split())
        except OSError:
            continue
        if {'memory', 'pids'} <= controllers:
            return Hierarchy(2, mount_point, mount_point, mount_point if 'cpu' in controllers else None)
    v1 = {ctrl: mp for mp, fstype, opts in reversed(mounts) if fstype == 'cgroup' for ctrl in opts}
    if 'memory' in v1 and 'pids' in v1:
        return Hierarchy(1, v1['memory'], v1['pids'], v1.get('cpu'), v1.get('cpuacct'))
    return None
