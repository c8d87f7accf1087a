"""The attack suite's main batch: most of its single-program attacks in one long batch, sent once.

The cases (programs in `tests.support.attacks.programs`) run side by side on both slots, the two wall-clock
cases first (about 6 s of wall time in all), and the host is checked right after the answer, before
anything else runs: live processes of the slot uids (`MainBatch.leftovers`) and daemons ``pgrep -f`` finds
(`MainBatch.daemons_after`).  The files of tests/system/attacks/ (one per attack class) check the cases of
their class through the package fixture ``main_batch`` (tests/system/attacks/conftest.py), which sends the
batch only once the safety gate (`tests.support.attacks.kit.run_safety_gate`) has passed."""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from judge.sandbox.kernel import cgroups
from tests.support.attacks.kit import SafetyInfo, batch, py
from tests.support.attacks.programs import (
    ALARM,
    CPP_INCLUDE,
    DAEMON,
    DEV_NODES,
    DEV_SHM,
    DNS,
    ENVIRONMENT,
    FORGED_DONE,
    FORK_BOMB,
    HUGE_FILE,
    LIST_PROC,
    MEMORY_BOMB,
    NETWORK,
    READ_FILES,
    RLIMITS,
    STDERR_FLOOD,
    STDOUT_FLOOD,
    SYMLINKS,
    SYSCALL_NUMBERS,
    SYSCALLS,
    THREAD_BOMB,
    WRITE_FILES,
)
from tests.support.paths import ROOT as REPO
from tests.support.processes.host_view import HostProc, settled_slot_leftovers
from tests.support.processes.stack import Stack

PROJECT_FILE = REPO / 'judge' / 'settings.py'
MAX_CHARS = 1000  # MAX_STDOUT_ERROR_LENGTH default
FILE_LIMIT = 16 * 1024 * 1024  # JUDGE_FILE_SIZE_LIMIT_MB default
DENIED = {'EPERM', 'EACCES', 'ENOENT', 'EROFS'}
EMPTY = "OK:b''"  # /etc/shadow is covered by a /dev/null bind mount: reading it may succeed, with nothing
NET_DENIED = {'EPERM', 'EACCES', 'ENETUNREACH'}


def refused(outcome: Any) -> bool:
    """An outcome ``attempt`` reported as refused (an errno name or an exception's), not ``OK``."""
    return isinstance(outcome, str) and not outcome.startswith('OK')


def _pgrep(pattern: str) -> list[str]:
    out = subprocess.run(['pgrep', '-af', pattern], capture_output=True, text=True, check=False)
    own = str(os.getpid())
    return [line for line in out.stdout.splitlines() if line and not line.startswith(own + ' ')]


def _port(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None, url
    return port


def _roots() -> list[str]:
    hierarchy = cgroups.detect()
    return [] if hierarchy is None else [hierarchy.pids_root, hierarchy.memory_root]


@dataclass
class MainBatch:
    """Parameters of the main batch and, per case name, its result."""

    marker: str
    paths: dict[str, Path]
    markers: dict[str, str]
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    wall_s: float = 0.0
    leftovers: dict[int, HostProc] = field(default_factory=dict)
    daemons_after: list[str] = field(default_factory=list)


WRITE_TARGETS = ('tmp', 'var_tmp', 'dev_shm', 'cache', 'repo')
"""The host places `host_cases`' writer tries, named as in `planted_paths`."""


@contextlib.contextmanager
def planted_paths(stack: Stack) -> Iterator[tuple[str, dict[str, Path]]]:
    """A fresh marker and the host paths the attacks aim at: two world-readable secrets planted now
    (``tmp_secret``, ``var_tmp_secret``) and the `WRITE_TARGETS` no write may reach; all removed on exit."""
    marker = f'judge-attack-{uuid.uuid4().hex[:12]}'
    secret_dir = Path('/tmp', f'{marker}-secrets')
    secret_dir.mkdir(mode=0o755)
    paths = {
        'tmp_secret': secret_dir / 'secret.txt',
        'var_tmp_secret': Path('/var/tmp', f'{marker}-secret.txt'),
        'tmp': Path('/tmp', marker),
        'var_tmp': Path('/var/tmp', marker),
        'dev_shm': Path('/dev/shm', marker),
        'cache': Path(stack.env['JUDGE_CACHE_DIR'], marker),
        'repo': REPO / marker,
    }
    try:
        for key in ('tmp_secret', 'var_tmp_secret'):
            paths[key].write_text(f'TOP-SECRET-{marker}\n')
            paths[key].chmod(0o644)  # world-readable: only the jail's own rules keep it out
        yield marker, paths
    finally:
        for path in paths.values():
            path.unlink(missing_ok=True)
        secret_dir.rmdir()


def host_cases(
    stack: Stack, gateway_url: str, marker: str, paths: dict[str, Path], cgroup_roots: list[str]
) -> dict[str, dict[str, Any]]:
    """The Python attacks on what the host holds: its network and names, its files (``paths``), the
    cgroups under ``cgroup_roots`` and its processes."""
    return {
        'network': py(NETWORK, redis_port=_port(stack.redis_url), gateway_port=_port(gateway_url)),
        'dns': py(DNS),
        'read_files': py(
            READ_FILES,
            project_file=str(PROJECT_FILE),
            repo=str(REPO),
            tmp_secret=str(paths['tmp_secret']),
            var_tmp_secret=str(paths['var_tmp_secret']),
            worker_pid=stack.worker.proc.pid,
        ),
        'write_files': py(
            WRITE_FILES,
            name=marker,
            cgroup_roots=[str(Path(root, 'cgroup.procs')) for root in cgroup_roots if os.path.isdir(root)],
            **{k: str(paths[k]) for k in WRITE_TARGETS},
        ),
        'list_proc': py(LIST_PROC),
    }


@contextlib.contextmanager
def run_main_batch(stack: Stack, gateway_url: str, gate: SafetyInfo) -> Iterator[MainBatch]:
    """Send the main batch (``gate``: the safety gate has passed) and check the host right after it; the files
    it planted on the host are removed on exit."""
    with planted_paths(stack) as (marker, paths):
        base = ''.join(random.choice('123456789') for _ in range(9))
        markers = {
            'base': base,
            'exit_popen': f'1234.{base}1',
            'exit_fork': f'1234.{base}2',
            'linger_popen': f'1234.{base}3',
            'linger_fork': f'1234.{base}4',
        }
        arch = os.uname().machine
        cases: dict[str, dict[str, Any]] = {
            # the two wall-clock cases first, so they run side by side on the two slots
            'alarm': py(ALARM),
            'daemon_linger': py(
                DAEMON,
                base=base,
                popen_marker=markers['linger_popen'],
                fork_marker=markers['linger_fork'],
                linger=True,
            ),
            'daemon_exit': py(
                DAEMON, base=base, popen_marker=markers['exit_popen'], fork_marker=markers['exit_fork'], linger=False
            ),
            **host_cases(stack, gateway_url, marker, paths, list(dict.fromkeys(_roots()))),
            'forged_done': py(FORGED_DONE),
            'fork_bomb': py(FORK_BOMB),
            'thread_bomb': py(THREAD_BOMB),
            'memory_bomb': py(MEMORY_BOMB, expected='done'),
            'rlimits': py(RLIMITS),
            'stdout_flood': py(STDOUT_FLOOD, expected='x'),
            'stderr_flood': py(STDERR_FLOOD),
            'huge_file': py(HUGE_FILE, name=f'{marker}.bin'),
            'symlinks': py(SYMLINKS, project_file=str(PROJECT_FILE), repo=str(REPO)),
            'environment': py(ENVIRONMENT),
            'dev_nodes': py(DEV_NODES),
            'dev_shm': py(DEV_SHM, name=f'{marker}-shm'),
            'cpp_include_shadow': {'type': 'cpp', 'solution': CPP_INCLUDE % '/etc/shadow'},
            'cpp_include_project': {'type': 'cpp', 'solution': CPP_INCLUDE % PROJECT_FILE},
        }
        if arch in SYSCALL_NUMBERS:
            cases['syscalls'] = py(SYSCALLS, nr=SYSCALL_NUMBERS[arch])
        state = MainBatch(marker=marker, paths=paths, markers=markers)
        start = time.monotonic()
        results = batch(gateway_url, list(cases.values()))
        state.wall_s = time.monotonic() - start
        # host-side checks right after the answer, before anything else runs
        state.leftovers = settled_slot_leftovers(gate.slot_uids)
        state.daemons_after = _pgrep(base)
        state.results = dict(zip(cases, results, strict=True))
        yield state
