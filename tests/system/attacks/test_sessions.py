"""Live sessions under attack: the main batch's Python attacks run as session cells (each in a session of
its own, over HTTP), checked with the same assertions as submissions where the two are jailed alike; then
what only sessions have: a frozen session trying to run, a fork reaching its siblings or its parent,
sessions reaching each other, a session outliving its TTL, a session leaving data for submissions.

Where sessions differ from submissions (their own uid family, no CPU or process-count rlimit: their
cgroups bound them; a cell over its time is interrupted, not killed; no ``/dev/shm``) the assertions say
so."""

from __future__ import annotations

import os
import random
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from judge.sandbox.kernel import cgroups
from judge.sandbox.kernel.coredump import CORE_LIMIT
from tests.support.attacks.batch import DENIED, NET_DENIED, PROJECT_FILE, MainBatch, host_cases, planted_paths, refused
from tests.support.attacks.kit import PIDS_BOUND, SafetyInfo, batch, program, py, report_of, survived
from tests.support.attacks.programs import (
    DEV_NODES,
    DEV_SHM,
    ENVIRONMENT,
    FORK_BOMB,
    HUGE_FILE,
    MEMORY_BOMB,
    NETWORK,
    RLIMITS,
    STDOUT_FLOOD,
    SYMLINKS,
    SYSCALL_NUMBERS,
    SYSCALLS,
    THREAD_BOMB,
)
from tests.support.helpers import request
from tests.support.paths import ROOT as REPO
from tests.support.processes.stack import Stack
from tests.system.attacks.host import test_filesystem, test_internals, test_network, test_privileges
from tests.system.attacks.limits import test_resource_limits as limits

pytestmark = [pytest.mark.integration, pytest.mark.attack]


def cgroup_roots() -> list[str]:
    """Every cgroup mount a session might try to join (the session host writes them, never a session)."""
    found = cgroups.detect()
    roots = [] if found is None else [found.pids_root, found.memory_root, found.cpu_root or '']
    return list(dict.fromkeys(r for r in [*roots, '/sys/fs/cgroup/freezer'] if r))


def session(url: str, **body: Any) -> str:
    status, info = request(f'{url}/sessions', {'kind': 'lean', **body})
    assert status == 200, info
    return str(info['session_id'])


def cell(url: str, sid: str, code: str, **body: Any) -> dict[str, Any]:
    status, result = request(f'{url}/sessions/{sid}/cells', {'code': code, **body}, timeout_s=180)
    assert status == 200, result
    return dict(result)


def value(url: str, sid: str, code: str) -> Any:
    result = cell(url, sid, code)
    assert result['verdict'] == 'accepted', result
    return result['value']


@pytest.fixture(scope='module')
def session_batch(stack: Stack, gateway_url: str, safety_gate: SafetyInfo) -> Iterator[MainBatch]:
    """The main batch's Python cases, each as a cell of a fresh session."""
    with planted_paths(stack) as (marker, paths):
        cases = {
            **host_cases(stack, gateway_url, marker, paths, cgroup_roots()),
            'fork_bomb': py(FORK_BOMB),
            'thread_bomb': py(THREAD_BOMB),
            'memory_bomb': py(MEMORY_BOMB),
            'rlimits': py(RLIMITS),
            'stdout_flood': py(STDOUT_FLOOD),
            'huge_file': py(HUGE_FILE, name=f'{marker}.bin'),
            'symlinks': py(SYMLINKS, project_file=str(PROJECT_FILE), repo=str(REPO)),
            'environment': py(ENVIRONMENT),
            'dev_nodes': py(DEV_NODES),
            'dev_shm': py(DEV_SHM, name=f'{marker}-shm'),
        }
        if os.uname().machine in SYSCALL_NUMBERS:
            cases['syscalls'] = py(SYSCALLS, nr=SYSCALL_NUMBERS[os.uname().machine])

        def run(sub: dict[str, Any]) -> dict[str, Any]:
            return cell(gateway_url, session(gateway_url), sub['solution'])

        state = MainBatch(marker=marker, paths=paths, markers={})
        with ThreadPoolExecutor(4) as pool:
            state.results = dict(zip(cases, pool.map(run, cases.values()), strict=True))
        yield state


# --- the submissions' attacks, as cells ------------------------------------------------------------


@pytest.mark.parametrize(
    'check',
    [
        test_network.test_network_tcp_udp_ipv6_raw_are_refused,
        test_network.test_dns_lookup_fails,
        test_filesystem.test_host_files_are_unreadable,
        test_filesystem.test_writes_never_reach_the_host,
        test_filesystem.test_dev_nodes_are_usable,
        test_privileges.test_dangerous_syscalls_are_refused,
        limits.test_thread_bomb_is_stopped,
    ],
    ids=lambda f: f.__name__,
)
def test_a_session_is_jailed_as_a_submission(session_batch: MainBatch, check: Any) -> None:
    check(session_batch)


def test_session_symlink_tricks(stack: Stack, session_batch: MainBatch) -> None:
    test_filesystem.test_symlink_tricks_in_the_work_dir(stack, session_batch)


def test_session_proc_shows_only_itself(stack: Stack, session_batch: MainBatch) -> None:
    test_internals.test_proc_shows_no_host_process(stack, session_batch)


def test_session_limits(session_batch: MainBatch) -> None:
    fork_bomb = session_batch.results['fork_bomb']
    survived(fork_bomb)
    got = report_of(fork_bomb)
    assert got['errno'] == 'EAGAIN' and 0 < got['forks'] < PIDS_BOUND and fork_bomb['verdict'] == 'runtime_error', got
    memory = session_batch.results['memory_bomb']
    assert memory['verdict'] == 'memory_limit' and memory['session_ended'], memory
    assert max(int(x) for x in memory['stdout'].split()) <= 256, memory['stdout']
    flood = session_batch.results['stdout_flood']
    assert flood['verdict'] == 'output_limit' and flood['stdout_truncated'], flood
    huge = report_of(session_batch.results['huge_file'])
    assert huge['errno'] in ('EFBIG', 'ENOSPC') and huge['mib'] <= 16, huge
    rl = report_of(session_batch.results['rlimits'])['limits']
    for name in ('FSIZE', 'NOFILE', 'CORE'):
        assert rl[name][0] == 'ValueError:not allowed to raise maximum limit', (name, rl)
    assert rl['CORE'][1:] == [CORE_LIMIT, CORE_LIMIT] and rl['FSIZE'][2] == 16 * 1024 * 1024, rl  # the warm parent's
    # no CPU rlimit (the host's wall clock per cell and the cgroup's quota bound it); the process count
    # is the host's own (its pids cgroup bounds each session; the uid is shared by a family)
    assert rl['CPU'][0] == 'unlimited' and rl['NPROC'][0] != 'RAISED', rl


def test_session_environment_is_clean_and_unprivileged(session_batch: MainBatch, safety_gate: SafetyInfo) -> None:
    got = report_of(session_batch.results['environment'])
    keys = got['keys']
    assert 'REDIS_URI' not in keys and not [k for k in keys if k.startswith(('MAX_', 'JUDGE_', 'CELERY', 'LD_'))]
    assert got['uid'] >= 100000 and got['uid'] not in safety_gate.slot_uids and got['groups'] == [], got
    status = got['status']
    assert status['NoNewPrivs'] == '1' and status['Seccomp'] == '2', status
    for cap in ('CapInh', 'CapPrm', 'CapEff', 'CapAmb'):
        assert int(status[cap], 16) == 0, status
    assert got['fds'] == [3], got  # the session's own control socket, nothing inherited


def test_session_has_no_dev_shm(session_batch: MainBatch) -> None:
    got = report_of(session_batch.results['dev_shm'])
    assert got['dev_shm_write'] in DENIED and refused(got['mp_lock']), got
    assert not Path('/dev/shm', f'{session_batch.marker}-shm').exists()


# --- what only sessions have ------------------------------------------------------------------------

ATTEMPT = """
import errno, os, signal
def attempt(fn):
    try:
        return 'OK', fn()
    except OSError as e:
        return errno.errorcode.get(e.errno)
"""
TICKER = """
import threading, time
ticks = []
def tick():
    while True:
        ticks.append(time.monotonic())
        time.sleep(0.01)
threading.Thread(target=tick, daemon=True).start()
time.sleep(0.2)
"""
LEAVE = """
import os
open(NAME, 'w').write('x')
for d in ('/tmp', '/var/tmp', '/dev/shm', os.path.dirname(os.getcwd())):
    try:
        open(os.path.join(d, NAME), 'w').write('x')
    except OSError:
        pass
os.path.abspath(NAME)
"""
LOOK = """
import contextlib, os
found = []
for d in ('.', '/tmp', '/var/tmp', '/dev/shm', os.path.dirname(os.getcwd())):
    with contextlib.suppress(OSError):
        found += [d for n in os.listdir(d) if n == NAME]
with contextlib.suppress(OSError):
    found.append(open(PATH).read())
print(found)
"""


def test_a_frozen_session_does_not_run(gateway_url: str) -> None:
    sid = session(gateway_url)
    value(gateway_url, sid, TICKER)
    time.sleep(1.5)
    # the ticker needs a moment after the thaw to add a tick (the cell's own thread may run first)
    gap = value(gateway_url, sid, 'time.sleep(0.1)\nmax(b - a for a, b in zip(ticks, ticks[1:]))')
    assert float(gap) >= 1.2, gap  # nothing ran between the two cells


def test_forks_reach_neither_siblings_nor_parent(gateway_url: str) -> None:
    sid = session(gateway_url)
    value(gateway_url, sid, ATTEMPT + 'home = os.getcwd()\nopen("mine.txt", "w").write("parent")\nparent = os.getpid()')
    status, forked = request(f'{gateway_url}/sessions/{sid}/fork', {'n': 2})
    assert status == 200, forked
    a, b = (c['session_id'] for c in forked['children'])
    a_pid = int(value(gateway_url, a, 'os.getpid()'))
    probe = (
        f'(attempt(lambda: os.kill({a_pid}, signal.SIGTERM)), attempt(lambda: os.kill(parent, signal.SIGTERM)),'
        ' attempt(lambda: open(home + "/mine.txt").read()),'
        ' [p for p in os.listdir("/proc") if p.isdigit()] == [str(os.getpid())])'
    )
    assert value(gateway_url, b, probe) == "('EPERM', 'EPERM', 'EACCES', True)"
    assert value(gateway_url, a, 'open("mine.txt").read()') == "'parent'"  # its own copy


def test_sessions_cannot_reach_each_other(gateway_url: str) -> None:
    one, two = session(gateway_url), session(gateway_url)
    planted = 'import os\nopen("secret", "w").write("s1")\n(os.getuid(), os.path.abspath("secret"), os.getpid())'
    uid, path, pid = eval(value(gateway_url, one, planted))
    probe = f'(os.getuid() != {uid}, attempt(lambda: open({path!r}).read()), attempt(lambda: os.kill({pid}, 15)))'
    got = value(gateway_url, two, ATTEMPT + probe)
    assert got in ("(True, 'EACCES', 'EPERM')", "(True, 'EACCES', 'ESRCH')"), got


def test_a_session_does_not_outlive_its_ttl(gateway_url: str) -> None:
    sid = session(gateway_url, ttl_s=1)
    uid = int(value(gateway_url, sid, 'import os, subprocess\nchild = subprocess.Popen(["sleep", "600"])\nos.getuid()'))
    time.sleep(5)
    assert request(f'{gateway_url}/sessions/{sid}/cells', {'code': '1'})[0] == 404
    left = subprocess.run(['pgrep', '-u', str(uid)], capture_output=True, text=True).stdout.split()
    assert left == [], f'processes of the expired session remain: {left}'


def test_a_session_leaves_nothing_for_submissions(gateway_url: str) -> None:
    sid = session(gateway_url)
    name = f'left-by-session-{random.randrange(10**9)}'
    path = value(gateway_url, sid, f'NAME = {name!r}\n' + LEAVE)
    look = f'NAME, PATH = {name!r}, {path}\n' + LOOK
    for result in batch(gateway_url, [{'type': 'python', 'solution': look} for _ in range(4)], route='/run/batch'):
        assert result['stdout'] == '[]\n', result
    assert not Path('/tmp', name).exists() and not Path('/dev/shm', name).exists()


def test_network_from_a_session_is_refused_too(gateway_url: str) -> None:
    got = report_of(
        cell(
            gateway_url,
            session(gateway_url),
            program(NETWORK, redis_port=6379, gateway_port=int(gateway_url.rsplit(':', 1)[1])),
        )
    )
    assert all(got[name] in NET_DENIED for name in ('redis_tcp', 'gateway_tcp', 'udp', 'raw')), got
