"""The host's view of a stack's slots: processes as this (root) test process sees them in /proc, the
slots' pids cgroups, and the page cache of host files (the attack suite's host-side checks)."""

from __future__ import annotations

import ctypes
import mmap
import os
import time
from dataclasses import dataclass
from pathlib import Path

from judge.sandbox.kernel import cgroups
from tests.support.processes.stack import Stack

_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class HostProc:
    """A host process as this (root) test process sees it in /proc."""

    pid: int
    ppid: int
    uid: int
    state: str
    cmdline: str

    @property
    def cwd(self) -> str:
        try:
            return os.readlink(f'/proc/{self.pid}/cwd')
        except OSError:
            return ''


def proc_info(pid: int) -> HostProc | None:
    """One host process, or None when it is gone."""
    try:
        stat_text = Path(f'/proc/{pid}/stat').read_text()
        status = Path(f'/proc/{pid}/status').read_text()
        cmdline = Path(f'/proc/{pid}/cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace')
    except OSError:
        return None
    fields = stat_text.rpartition(')')[2].split()
    uid = next(int(line.split()[1]) for line in status.splitlines() if line.startswith('Uid:'))
    return HostProc(pid, int(fields[1]), uid, fields[0], cmdline.strip())


def host_procs() -> dict[int, HostProc]:
    """Every process on the host."""
    info = {}
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            got = proc_info(int(entry))
            if got is not None:
                info[got.pid] = got
    return info


def descendants(root: int) -> dict[int, HostProc]:
    """Host processes below ``root``."""
    info = host_procs()
    children: dict[int, list[int]] = {}
    for proc in info.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    found: dict[int, HostProc] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found[pid] = info[pid]
        todo.extend(children.get(pid, []))
    return found


def is_slot_server(proc: HostProc) -> bool:
    """The slot server (the outer relay or the server inside its namespaces)."""
    return proc.uid == 0 and 'sandbox/server/main.py' in proc.cmdline


def is_zygote(proc: HostProc) -> bool:
    """A slot's warm parent (judge.sandbox.zygote.main; before, a fork of the slot server), a root process."""
    return proc.uid == 0 and ('judge.sandbox.zygote' in proc.cmdline or 'sandbox/server/main.py' in proc.cmdline)


def slot_servers(stack: Stack) -> set[int]:
    """The slot servers below the worker: per slot the outer relay and the server inside the namespaces."""
    below = descendants(stack.worker.proc.pid)
    servers = {pid for pid, proc in below.items() if is_slot_server(proc)}
    outer = {pid for pid in servers if below[pid].ppid not in servers}
    inner = {pid for pid in servers if below[pid].ppid in outer}
    return outer | inner


def slot_leftovers(slot_uids: set[int]) -> dict[int, HostProc]:
    """Live (non-zombie) processes of the slot uids anywhere on the host, except idle spares.

    Slot numbers, hence slot uids, are unique per host (judge.sandbox.slots), so every process of these
    uids belongs to this stack.  Each zygote may keep one pre-forked, already jailed child waiting for
    the next request (a spare: forked, not exec'd, so it has its zygote's command line, and it waits in
    a fresh, existing work dir); one such child per zygote is not a leftover.
    """
    procs = host_procs()
    live = {pid: p for pid, p in procs.items() if p.uid in slot_uids and p.state not in ('Z', 'X')}
    spare_of: dict[int, int] = {}
    for pid, proc in sorted(live.items()):
        parent = procs.get(proc.ppid)
        if (
            parent is not None
            and is_zygote(parent)
            and proc.cmdline == parent.cmdline
            and proc.cwd
            and not proc.cwd.endswith('(deleted)')
            and proc.ppid not in spare_of
        ):
            spare_of[proc.ppid] = pid
    spares = set(spare_of.values())
    return {pid: proc for pid, proc in live.items() if pid not in spares}


def settled_slot_leftovers(slot_uids: set[int], timeout_s: float = 3.0) -> dict[int, HostProc]:
    """`slot_leftovers`, allowing the moment a slot server takes to kill and reap after it answered."""
    deadline = time.monotonic() + timeout_s
    while True:
        leftovers = slot_leftovers(slot_uids)
        if not leftovers or time.monotonic() >= deadline:
            return leftovers
        time.sleep(0.05)


def pids_cgroup_dir(rel: str) -> Path:
    """The host directory of a slot's pids cgroup, from its path in /proc/<pid>/cgroup."""
    hierarchy = cgroups.detect()
    assert hierarchy is not None
    return Path(hierarchy.pids_root, rel.lstrip('/'))


def slot_tasks(rel: str) -> int:
    """Tasks charged to a slot's pids cgroup (live processes, threads, unreaped zombies)."""
    return int((pids_cgroup_dir(rel) / 'pids.current').read_text())


def page_cache(path: str | Path) -> tuple[int, int]:
    """(pages of ``path`` in the page cache, pages in all), as root sees them: mincore on a private mapping
    (the kernel answers truly for a file its caller may write, and root may write any)."""
    with open(path, 'rb') as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) as mapping:
        vector = (ctypes.c_ubyte * ((len(mapping) + mmap.PAGESIZE - 1) // mmap.PAGESIZE))()
        anchor = ctypes.c_char.from_buffer(mapping)
        try:
            address = ctypes.c_void_p(ctypes.addressof(anchor))
            assert _libc.mincore(address, ctypes.c_size_t(len(mapping)), vector) == 0, ctypes.get_errno()
        finally:
            del anchor
    return sum(v & 1 for v in vector), len(vector)


def evict(path: str | Path) -> None:
    """Drop ``path``'s clean pages from the page cache (POSIX_FADV_DONTNEED, as root on the host)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
