"""Where a judge stack's CPU goes, process kind by process kind, from ``/proc`` (Linux).

Kinds, told apart by the names the judge gives its processes (``/proc/<pid>/comm``) and, for
processes started some other way, by command line and place in the process tree:

* ``gateway``: gateway processes (``judge-gateway``, ``python -m api``, uvicorn);
* ``redis``: ``redis-server``;
* ``consumer``: a Celery worker instance's main process (``judge-consumer``): broker I/O, acks,
  dispatch, task events, for its whole pool;
* ``pool``: a Celery pool process (``judge-pool``): one task at a time;
* ``slot_server``: a pool process's sandbox slot server (``judge/sandbox/server/main.py``);
* ``zygote``: the processes below the slot server that fork the children (they keep its command
  line and have children of their own);
* ``program``: the forked children that run submissions (mostly counted when their parent reaps
  them: the CPU of the children a zygote reaped);
* ``flower``, ``other``.

A process's own CPU (utime+stime) counts for its kind; the CPU of children it has reaped
(cutime+cstime) counts for the kind of those children.  Processes that exit between two snapshots
and whose parent is not in the stack are not counted.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ['KINDS', 'Proc', 'cpu_delta', 'cpu_snapshot', 'processes', 'rss_snapshot']

KINDS = ('gateway', 'redis', 'consumer', 'pool', 'slot_server', 'zygote', 'program', 'flower', 'other')
DEFAULT_MATCH = r'celery|uvicorn|redis-server|judge|-m api'
_NAMES = {'judge-gateway': 'gateway', 'judge-consumer': 'consumer', 'judge-pool': 'pool'}
_CHILD_KIND = {'consumer': 'pool', 'pool': 'slot_server', 'slot_server': 'zygote', 'zygote': 'program'}
"""The kind of the children a process of a kind reaps."""

Snapshot = dict[tuple[int, str], tuple[str, float]]
"""``{(pid, 'own' | 'reaped'): (kind, cpu_s)}``."""


@dataclass(frozen=True)
class Proc:
    """One process as read from ``/proc``."""

    pid: int
    ppid: int
    comm: str
    cmdline: str
    own_s: float
    reaped_s: float


def processes() -> dict[int, Proc]:
    """Every readable process on the host, this one excluded."""
    tick_s = 1.0 / os.sysconf('SC_CLK_TCK')
    out: dict[int, Proc] = {}
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / 'cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace').strip()
            stat = (entry / 'stat').read_text()
        except OSError:
            continue
        comm = stat[stat.index('(') + 1 : stat.rindex(')')]
        fields = stat.rsplit(')', 1)[1].split()
        ticks = [int(f) for f in fields[11:15]]
        pid = int(entry.name)
        out[pid] = Proc(
            pid, int(fields[1]), comm, cmdline, (ticks[0] + ticks[1]) * tick_s, (ticks[2] + ticks[3]) * tick_s
        )
    return out


def _own_kind(proc: Proc, parent_kind: str | None, has_children: bool) -> str:
    named = _NAMES.get(proc.comm)
    if named:
        return named
    text = f'{proc.comm} {proc.cmdline}'
    if 'redis-server' in text:
        return 'redis'
    if 'flower' in proc.cmdline:
        return 'flower'
    if 'sandbox' in proc.cmdline:  # the slot server and everything it forks keep its command line
        if parent_kind in ('slot_server', 'zygote', 'program'):
            return 'zygote' if has_children and parent_kind != 'program' else 'program'
        return 'slot_server'
    if 'uvicorn' in proc.cmdline or re.search(r'-m api\b', proc.cmdline):
        return 'gateway'
    if 'celery' in proc.cmdline and 'worker' in proc.cmdline:  # not named: tell them apart by the tree
        return 'pool' if parent_kind == 'consumer' else 'consumer'
    if parent_kind in ('zygote', 'program'):
        return 'program'
    return 'other'


def kinds(procs: dict[int, Proc], pids: set[int]) -> dict[int, str]:
    """The kind of each of ``pids`` (parents first, so a child's kind can follow its parent's)."""
    out: dict[int, str] = {}
    parents = {proc.ppid for proc in procs.values()}

    def kind(pid: int, depth: int = 0) -> str:
        if pid not in out:
            proc = procs[pid]
            parent = kind(proc.ppid, depth + 1) if proc.ppid in procs and depth < 64 else None
            out[pid] = _own_kind(proc, parent, pid in parents)
        return out[pid]

    for pid in pids:
        kind(pid)
    return {pid: out[pid] for pid in pids}


def select(procs: dict[int, Proc], pattern: str, root_pid: int | None = None) -> set[int]:
    """Processes named by the judge (`_NAMES`) or whose command line matches ``pattern``; with
    ``root_pid``, only that process's tree."""
    regex = re.compile(pattern)
    keep = set(procs) if root_pid is None else {root_pid}
    while root_pid is not None and (more := {p for p, v in procs.items() if v.ppid in keep} - keep):
        keep |= more
    return {
        p
        for p in keep
        if p in procs and (procs[p].comm in _NAMES or (procs[p].cmdline and regex.search(procs[p].cmdline)))
    }


def cpu_snapshot(pattern: str = DEFAULT_MATCH, root_pid: int | None = None) -> Snapshot:
    """CPU seconds so far of the selected processes (`select`), by process and part (own, reaped)."""
    procs = processes()
    chosen = select(procs, pattern, root_pid)
    by_pid = kinds(procs, chosen)
    out: Snapshot = {}
    for pid, kind in by_pid.items():
        proc = procs[pid]
        out[(pid, 'own')] = (kind, proc.own_s)
        out[(pid, 'reaped')] = (_CHILD_KIND.get(kind, kind), proc.reaped_s)
    return out


_REAPED_IN_STACK = frozenset(_CHILD_KIND.values())
"""Kinds whose processes are reaped by a parent of the stack (`_CHILD_KIND`)."""


def cpu_delta(before: Snapshot, after: Snapshot) -> dict[str, float]:
    """CPU seconds used per kind between two snapshots (new processes count from zero).

    A process of the first snapshot that a parent of the stack reaped before the second (a warm
    parent replaced, a pool process recycled) shows its whole life's CPU in that parent's reaped
    part: what it had used by the first snapshot is taken off again, under its own kind."""
    used: dict[str, float] = {}
    for key, (kind, cpu_s) in after.items():
        used[kind] = used.get(kind, 0.0) + cpu_s - before.get(key, (kind, 0.0))[1]
    for (pid, part), (_, cpu_s) in before.items():
        own_kind = before.get((pid, 'own'), ('other', 0.0))[0]
        if (pid, part) not in after and own_kind in _REAPED_IN_STACK:
            used[own_kind] = used.get(own_kind, 0.0) - cpu_s
    return used


def rss_snapshot(pattern: str = DEFAULT_MATCH, root_pid: int | None = None) -> dict[str, tuple[float, float]]:
    """``{kind: (sum of VmRSS, largest VmHWM)}`` in MiB over the processes `cpu_snapshot` selects."""
    procs = processes()
    out: dict[str, tuple[float, float]] = {}
    for pid, kind in kinds(procs, select(procs, pattern, root_pid)).items():
        try:
            status = Path(f'/proc/{pid}/status').read_text()
        except OSError:
            continue
        fields = dict(line.split(':', 1) for line in status.splitlines() if ':' in line)
        rss = float(fields.get('VmRSS', '0 kB').split()[0]) / 1024
        hwm = float(fields.get('VmHWM', '0 kB').split()[0]) / 1024
        total, peak = out.get(kind, (0.0, 0.0))
        out[kind] = (total + rss, max(peak, hwm))
    return out
