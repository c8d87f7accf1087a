"""Signals: ``kill(-1)`` and a kill of every pid cannot reach another execution or a host process, and killing
the program's parent (the slot's zygote) or pid 1 (the slot server) is refused: the slot servers stay the same."""

from __future__ import annotations

import os

import pytest

from tests.support.attacks.kit import batch, py, report_of, survived
from tests.support.processes.host_view import slot_servers
from tests.support.processes.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]


SLEEPER = """
import time
start = time.time()
time.sleep(2)
report(alive=True, start=start, end=time.time())
"""


KILLER = """
import signal, time
time.sleep(0.3)  # let the sleeper in the other slot start
start = time.time()
outcome = {'kill_all': attempt(os.kill, -1, signal.SIGKILL)}
tally = {}
for pid in range(1, 401):
    if pid != os.getpid():
        got = attempt(os.kill, pid, signal.SIGKILL)
        key = 'OK:%d' % pid if got.startswith('OK') else got
        tally[key] = tally.get(key, 0) + 1
outcome['tally'] = tally
outcome['host_pids_visible'] = [attempt(os.kill, pid, 0) for pid in P['host_pids']]
report(start=start, **outcome)
"""


KILL_PARENT = """
import signal
ppid = os.getppid()
pgid = os.getpgid(1)  # 0 when the group's leader lives outside this pid namespace; killpg(0) would hit us
report(ppid=ppid, kill_parent=attempt(os.kill, ppid, signal.SIGKILL), stop_init=attempt(os.kill, 1, signal.SIGSTOP),
       term_init=attempt(os.kill, 1, signal.SIGTERM), init_pgid=pgid,
       killpg_init=attempt(os.killpg, pgid, signal.SIGKILL) if pgid > 0 else 'no-group-here')
"""


def test_kill_minus_one_cannot_reach_another_execution(stack: Stack, gateway_url: str) -> None:
    host_pids = [os.getpid(), stack.worker.proc.pid, stack.redis.proc.pid, stack.gateway.proc.pid]
    servers = slot_servers(stack)
    subs = [py(SLEEPER), py(KILLER, host_pids=host_pids)]
    sleeper, killer = batch(gateway_url, subs, route='/run/batch')
    survived(sleeper)
    survived(killer)
    slept, killed = report_of(sleeper), report_of(killer)
    assert sleeper['verdict'] == 'accepted' and slept['alive'] is True, sleeper
    assert slept['start'] < killed['start'] < slept['end'], (slept, killed)  # the attack ran during the sleep
    # Its pid namespace holds only init (the slot server, skipped by kill -1) and the root zygote
    # (EPERM); Linux reports 0 for kill(-1) when every target refused with EPERM.
    assert killed['kill_all'] in ('ESRCH', 'EPERM', 'OK'), killed
    assert not [k for k in killed['tally'] if k.startswith('OK')], killed
    assert set(killed['tally']) <= {'ESRCH', 'EPERM'}, killed
    assert killed['host_pids_visible'] == ['ESRCH'] * len(host_pids), killed
    assert stack.worker.proc.poll() is None and stack.gateway.proc.poll() is None and stack.redis.proc.poll() is None
    assert slot_servers(stack) == servers  # no slot server (or its zygote) died and was replaced


def test_killing_the_parent_leaves_the_slot_alive(stack: Stack, gateway_url: str) -> None:
    before = slot_servers(stack)
    assert before, 'no slot server found below the worker'
    normal = {
        'type': 'python',
        'solution': 'print(sum(map(int, input().split())))',
        'input': '2 3',
        'expected_output': '5',
    }
    results = batch(gateway_url, [py(KILL_PARENT), py(KILL_PARENT), normal, normal, normal, normal])
    for result in results[:2]:
        survived(result)
        got = report_of(result)
        assert got['ppid'] > 1, got  # the parent is the slot's zygote, a root process
        assert got['kill_parent'] == 'EPERM' and got['stop_init'] == 'EPERM' and got['term_init'] == 'EPERM', got
        assert got['killpg_init'] in ('EPERM', 'ESRCH', 'no-group-here'), got
    for result in results[2:]:
        assert result['verdict'] == 'accepted' and result['stdout'] == '5\n', result
    assert slot_servers(stack) == before  # the same slot servers: none died and none was restarted
