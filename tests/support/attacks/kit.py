"""What every attack test file shares: submissions and answers, the safety gate, slot health.

SAFETY (docs/sandbox.md, "never let a sandbox bug signal host processes"): `run_safety_gate` refuses to
let any attack run unless a probe proves that submissions run as a non-root uid inside a private PID
namespace, that the node reports the ``namespaces`` tier, and that every slot's cgroups carry the
pids/memory bounds.  Each attack file makes it an autouse fixture.  Set ``JUDGE_REQUIRE_ATTACKS=1`` to
turn a refusal into a failure.

`SlotHealth` wraps an attack: a small batch of honest programs (Python, C, bash) must pass before and
after it, in every slot; afterwards no process of the slot uids may survive, each slot's pids cgroup
must hold nothing but the pre-forked spare, and the slot servers must be the same processes (none was
restarted) unless the test says that restarting is the point.  What the host shows of the slots (their
processes, servers and pids cgroups) comes from `tests.support.processes.host_view`.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from judge.sandbox.kernel import cgroups
from tests.support.helpers import post, request
from tests.support.processes.host_view import settled_slot_leftovers, slot_servers, slot_tasks
from tests.support.processes.stack import Stack

SLOTS = 2  # MAX_WORKERS of the test stack (tests/support/processes/stack.py)
PIDS_BOUND = 64
NPROC_SLACK = 8  # judge.sandbox.server.jail.NPROC_SLACK: RLIMIT_NPROC sits above the pids cgroup's bound
MEMORY_BOUND = 256 * 1024 * 1024
STATUS_WAIT_S = 30.0
"""How long the safety gate waits for /status to name the isolation tier, and for every slot to answer a probe
(under load, one slot may take every probe of a few rounds)."""

# Common helpers prepended to every Python attack program.  `P` holds the case's parameters; `report`
# prints one compact JSON line (stdout is cut at 1000 chars, so reports stay short); `attempt` returns
# 'OK[:value]' or the errno name of the OSError that stopped the call.
PRELUDE = """\
import errno, json, os, sys
def attempt(fn, *args):
    try:
        value = fn(*args)
    except OSError as e:
        return errno.errorcode.get(e.errno, type(e).__name__) if e.errno else type(e).__name__
    except Exception as e:
        return type(e).__name__
    return 'OK' if value is None else 'OK:' + str(value)[:40]
def read(path):
    with open(path, 'rb') as f:
        return f.read(64)
def report(**kw):
    print(json.dumps(kw, sort_keys=True, separators=(',', ':')), flush=True)
def slot():
    with open('/proc/self/cgroup') as f:
        return [line.strip() for line in f if ':pids:' in line or line.startswith('0::')][0]
"""

PROBE = """
import resource, time
status = {}
try:
    with open('/proc/self/status') as f:
        for line in f:
            key, _, value = line.partition(':')
            if key in ('NSpid', 'Uid'):
                status[key] = value.split()
except OSError as e:
    status['error'] = e.errno
try:
    pidns = os.readlink('/proc/self/ns/pid')
except OSError as e:
    pidns = 'error:%d' % e.errno
try:
    with open('/proc/self/cgroup') as f:
        cgroup = [line.strip() for line in f if 'pids' in line or 'memory' in line or line.startswith('0::')]
except OSError:
    cgroup = []
try:
    visible = len([x for x in os.listdir('/proc') if x.isdigit()])
except OSError:
    visible = None
time.sleep(0.3)  # keep this slot busy so the other probe lands on the other slot
report(uid=os.getuid(), euid=os.geteuid(), pid=os.getpid(), ppid=os.getppid(), nspid=status.get('NSpid'),
       pidns=pidns, cgroup=cgroup, nproc=resource.getrlimit(resource.RLIMIT_NPROC), visible=visible)
"""

CANARY = """
import threading, time
time.sleep(P['sleep'])
entries, shm = sorted(os.listdir('.')), sorted(os.listdir('/dev/shm'))
# the work dirs (and done FIFOs) of earlier canaries, wherever they ran: each execution's own, all gone
left = [path + end for path in P['earlier'] for end in ('', '.done') if os.path.lexists(path + end)]
kids, forks = [], 'OK'
try:
    for _ in range(P['forks']):
        pid = os.fork()
        if pid == 0:
            time.sleep(0.05)
            os._exit(0)
        kids.append(pid)
except OSError as e:
    forks = errno.errorcode.get(e.errno)
for pid in kids:
    os.waitpid(pid, 0)
threads, started = 'OK', []
try:
    for _ in range(P['threads']):
        t = threading.Thread(target=time.sleep, args=(0.05,))
        t.start()
        started.append(t)
except RuntimeError as e:
    threads = str(e)
for t in started:
    t.join()
report(slot=slot(), entries=entries, shm=shm, left=left, forks=forks, threads=threads, hash=hash('canary'),
       cwd=os.getcwd())
"""
# Zombie makers (processes nobody waits for), shared by the reaping and compile attacks.
CLONE_NR = {'x86_64': 56, 'aarch64': 220}

CLONE_PARENT = """
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
CLONE_PARENT, SIGCHLD = 0x00008000, 17
made = {'silent': 0, 'signalled': 0, 'sleeping': 0}
for kind, flags, count in (('silent', CLONE_PARENT, 30), ('signalled', CLONE_PARENT | SIGCHLD, 10)):
    for _ in range(count):
        pid = libc.syscall(P['nr'], flags, 0, 0, 0, 0)
        if pid == 0:
            os._exit(0)  # a sibling of this program, child of its parent: a zombie nobody waits for
        made[kind] += pid > 0
for _ in range(5):
    pid = libc.syscall(P['nr'], CLONE_PARENT, 0, 0, 0, 0)
    if pid == 0:
        time.sleep(100)
        os._exit(0)
    made['sleeping'] += pid > 0
report(**made)
"""

C_CLONE = r"""
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    int silent = 0, signalled = 0, unwaited = 0;
    for (int i = 0; i < 25; i++) {
        long pid = syscall(SYS_clone, CLONE_PARENT, 0, 0, 0, 0);
        if (pid == 0) _exit(0);
        silent += pid > 0;
    }
    for (int i = 0; i < 10; i++) {
        long pid = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
        if (pid == 0) { if (i < 3) pause(); _exit(0); }
        signalled += pid > 0;
    }
    for (int i = 0; i < 20; i++) {
        pid_t pid = fork();
        if (pid == 0) _exit(0);
        unwaited += pid > 0;
    }
    printf("{\"silent\":%d,\"signalled\":%d,\"unwaited\":%d}\n", silent, signalled, unwaited);
    fflush(stdout);
    _exit(0);
}
"""

C_CANARY = (
    '#include <stdio.h>\n'
    'int main(void) { int a, b; if (scanf("%d %d", &a, &b) != 2) return 2; printf("%d\\n", a + b); }\n'
)
BASH_CANARY = 'read a b\necho $((a + b))\n'


# --------------------------------------------------------------------------------------------------
# submissions and answers


def program(body: str, **params: Any) -> str:
    """A Python attack program: its parameters, the prelude, then ``body``."""
    return f'P = {params!r}\n{PRELUDE}{body}'


def py(body: str, expected: str | None = None, **params: Any) -> dict[str, Any]:
    """A Python submission of ``body`` (see `program`)."""
    sub: dict[str, Any] = {'type': 'python', 'solution': program(body, **params)}
    if expected is not None:
        sub['expected_output'] = expected
    return sub


def c(source: str, expected: str | None = None, stdin: str = '', lang: str = 'c') -> dict[str, Any]:
    """A C (or C++ with ``lang='cpp'``) submission."""
    sub: dict[str, Any] = {'type': lang, 'solution': source, 'input': stdin}
    if expected is not None:
        sub['expected_output'] = expected
    return sub


def bash(script: str, expected: str | None = None, stdin: str = '') -> dict[str, Any]:
    """A bash submission."""
    sub: dict[str, Any] = {'type': 'bash', 'solution': script, 'input': stdin}
    if expected is not None:
        sub['expected_output'] = expected
    return sub


def batch(url: str, subs: list[dict[str, Any]], route: str = '/run/long-batch') -> list[dict[str, Any]]:
    """Judge ``subs`` over HTTP; the results in order."""
    results: list[dict[str, Any]] = post(url, route, {'type': 'batch', 'submissions': subs}, timeout_s=150)['results']
    assert len(results) == len(subs)
    return results


def report_of(result: dict[str, Any]) -> dict[str, Any]:
    """The program's own JSON report (its last JSON line on stdout)."""
    for line in reversed((result.get('stdout') or '').splitlines()):
        if line.startswith('{'):
            data: dict[str, Any] = json.loads(line)
            return data
    raise AssertionError(f'no report in the output: {result!r}')


def survived(result: dict[str, Any]) -> None:
    """The sandbox itself must come through every attack: a normal verdict, never an infrastructure error."""
    assert result['verdict'] not in ('internal_error', 'queue_timeout'), result
    assert result['reason'] not in ('internal_error', 'queue_timeout'), result
    assert not result.get('error'), result


def accepted(result: dict[str, Any], stdout: str | None = None) -> None:
    """An honest program's result: accepted, with ``stdout`` exactly when given."""
    assert result['verdict'] == 'accepted' and result['success'] is True, result
    if stdout is not None:
        assert result['stdout'] == stdout, result


# --------------------------------------------------------------------------------------------------
# the safety gate


@dataclass
class SafetyInfo:
    """What the gate established about the slots."""

    slot_uids: set[int] = field(default_factory=set)
    cgroups: dict[str, str] = field(default_factory=dict)  # pids cgroup path (as in /proc/self/cgroup) -> pids.max
    probes: list[dict[str, Any]] = field(default_factory=list)


def _cgroup_limits(paths: list[str]) -> tuple[str, int]:
    """Check on the host the bounds of a probe's slot cgroup; returns (its pids cgroup path, pids.max)."""
    hierarchy = cgroups.detect()
    assert hierarchy is not None, 'no memory+pids cgroup hierarchy on this host'
    pids_rel = memory_rel = None
    for line in paths:
        _, controllers, rel = line.split(':', 2)
        if hierarchy.version == 2 and controllers == '':
            pids_rel = memory_rel = rel
        elif 'pids' in controllers.split(','):
            pids_rel = rel
        elif 'memory' in controllers.split(','):
            memory_rel = rel
    assert pids_rel and memory_rel and pids_rel != '/', f'the probe is in no slot cgroup: {paths}'
    pids_max = Path(hierarchy.pids_root, pids_rel.lstrip('/'), 'pids.max').read_text().strip()
    memory_file = 'memory.max' if hierarchy.version == 2 else 'memory.limit_in_bytes'
    memory_max = Path(hierarchy.memory_root, memory_rel.lstrip('/'), memory_file).read_text().strip()
    assert pids_max != 'max' and int(pids_max) <= PIDS_BOUND, f'{pids_rel}: pids.max {pids_max}'
    assert memory_max != 'max' and int(memory_max) <= MEMORY_BOUND, f'{memory_rel}: memory limit {memory_max}'
    return pids_rel, int(pids_max)


def _check_probe(result: dict[str, Any], host_pidns: str) -> dict[str, Any]:
    assert result['verdict'] == 'accepted', f'the probe did not run: {result}'
    probe = report_of(result)
    assert probe['uid'] != 0 and probe['euid'] != 0, f'submissions run as ROOT: {probe}'
    assert probe['pidns'].startswith('pid:['), f'cannot tell the probe pid namespace: {probe}'
    assert probe['pidns'] != host_pidns, f'submissions share the HOST pid namespace: {probe}'
    # /proc is the slot's own (one NSpid level) and shows a program only its own processes; the parent
    # is the slot's zygote (not the namespace's init, the slot server).
    assert probe['nspid'] == [str(probe['pid'])], f'NSpid does not show a private pid namespace: {probe}'
    assert probe['ppid'] > 1, f'the parent is not a zygote inside a private pid namespace: {probe}'
    assert probe['visible'] is not None and probe['visible'] <= 8, f'the probe sees many processes: {probe}'
    assert 0 < probe['nproc'][1] <= PIDS_BOUND + NPROC_SLACK, f'RLIMIT_NPROC is not bounded: {probe}'
    return probe


def run_safety_gate(gateway_url: str) -> SafetyInfo:
    """Prove the isolation the attacks rely on, or skip (fail with JUDGE_REQUIRE_ATTACKS=1)."""
    info = SafetyInfo()
    try:
        deadline = time.monotonic() + STATUS_WAIT_S
        while True:  # a loaded worker may miss /status' liveness poll: ask again for a while
            status, payload = request(gateway_url + '/status')
            assert status == 200, (status, payload)
            if payload.get('isolation') or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert payload.get('isolation') == 'namespaces', f'isolation tier is {payload.get("isolation")!r}'
        host_pidns = os.readlink('/proc/self/ns/pid')
        probe_deadline = time.monotonic() + STATUS_WAIT_S
        while time.monotonic() < probe_deadline:  # until every slot has answered a probe
            for result in batch(gateway_url, [py(PROBE) for _ in range(SLOTS)], route='/run/batch'):
                probe = _check_probe(result, host_pidns)
                rel, pids_max = _cgroup_limits(probe['cgroup'])
                info.cgroups[rel] = str(pids_max)
                info.slot_uids.add(probe['uid'])
                info.probes.append(probe)
            if len(info.slot_uids) >= SLOTS and len(info.cgroups) >= SLOTS:
                break
        assert len(info.slot_uids) >= SLOTS, f'only slot uids {info.slot_uids} answered'
        assert len(info.cgroups) >= SLOTS, f'only slot cgroups {info.cgroups} answered'
    except AssertionError as exc:
        message = f'ATTACK SUITE REFUSED TO RUN (sandbox safety gate): {exc}'
        if os.environ.get('JUDGE_REQUIRE_ATTACKS') == '1':
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return info


# --------------------------------------------------------------------------------------------------
# slot health around an attack


def health_batch(earlier: list[str] | None = None) -> list[dict[str, Any]]:
    """Honest programs: Python canaries (one per slot and more; each checks that the ``earlier`` canaries'
    work dirs are gone), a C and a bash program."""
    canaries = [
        py(CANARY, sleep=0.15, forks=PIDS_BOUND - 16, threads=20, earlier=earlier or []) for _ in range(2 * SLOTS)
    ]
    return [*canaries, c(C_CANARY, '5', '2 3'), bash(BASH_CANARY, '9', '4 5')]


class SlotHealth:
    """Checks that every slot works and is clean, and that no slot server was replaced."""

    def __init__(self, stack: Stack, gateway_url: str, gate: SafetyInfo) -> None:
        self.stack = stack
        self.url = gateway_url
        self.gate = gate
        self.servers: set[int] = set()
        self.restart_expected = False
        self.reports: dict[str, dict[str, Any]] = {}
        self.workdirs: list[str] = []
        """The work dirs of the last canaries: a later canary checks they are gone."""

    def check(self) -> None:
        """Every slot answers honest programs correctly, in a clean state; nothing is left over."""
        seen: dict[str, dict[str, Any]] = {}
        for _ in range(4):
            subs = health_batch(self.workdirs[-4 * SLOTS :])
            results = batch(self.url, subs)
            for result in results[: 2 * SLOTS]:
                accepted(result)
                got = report_of(result)
                assert got['entries'] == ['source.py'], f'a file survived into a later execution: {got}'
                assert got['shm'] == [], f'a /dev/shm entry survived into a later execution: {got}'
                assert got['left'] == [], f"an earlier execution's work dir survived: {got}"
                assert got['forks'] == 'OK' and got['threads'] == 'OK', f'the slot lost processes: {got}'
                assert got['cwd'] not in self.workdirs, f'a work dir was used twice: {got}'
                self.workdirs.append(got['cwd'])
                seen[got['slot']] = got
            accepted(results[-2], '5\n')
            accepted(results[-1], '9\n')
            if len(seen) >= SLOTS:
                break
        assert len(seen) >= SLOTS, f'the canaries reached only {sorted(seen)}'
        self.reports = seen
        assert settled_slot_leftovers(self.gate.slot_uids) == {}
        self.assert_slots_hold_only_spares()

    def assert_slots_hold_only_spares(self, timeout_s: float = 3.0) -> None:
        """Each slot's pids cgroup holds at most the pre-forked spare (no live process, no zombie)."""
        deadline = time.monotonic() + timeout_s
        while True:
            tasks = {rel: slot_tasks(rel) for rel in self.gate.cgroups}
            if all(n <= 1 for n in tasks.values()) or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        assert all(n <= 1 for n in tasks.values()), f'tasks still charged to the slots: {tasks}'

    def current_servers(self) -> set[int]:
        """The slot servers now (two processes per slot)."""
        servers = slot_servers(self.stack)
        assert len(servers) == 2 * SLOTS, f'slot servers: {servers}'
        return servers

    def before(self) -> None:
        """Before an attack: healthy slots; remember the slot servers."""
        self.check()
        self.servers = self.current_servers()

    def after(self) -> None:
        """After an attack: healthy slots, and the same slot servers unless a restart was the point."""
        self.check()
        now = slot_servers(self.stack)
        if not self.restart_expected:
            assert now == self.servers, f'a slot server was restarted: {self.servers} -> {now}'
        assert self.stack.worker.proc.poll() is None, 'the worker died'
