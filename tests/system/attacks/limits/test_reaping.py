"""Reaping: processes reparented to the slot's warm parent or server, and zombies nobody waits for.

Every process ever charged to a slot must be reaped: the zygote is the slot's child subreaper and reaps
every child (``__WALL``: also clones that asked for no exit signal), and the server waits after each
execution until the slot's pids cgroup is empty.  The health check after each attack forks 48 processes
and starts 20 threads in every slot (the budget is 64) and checks on the host that each slot's pids
cgroup holds nothing but its spare.

From the main batch (`tests.support.attacks.batch`): nothing of its fork and thread bombs or of its setsid
daemons (a double fork, a Popen in a session of its own) is alive on the host right after the answer.
"""

from __future__ import annotations

import os

import pytest

from tests.support.attacks.batch import MainBatch
from tests.support.attacks.kit import (
    C_CLONE,
    CLONE_NR,
    CLONE_PARENT,
    SlotHealth,
    bash,
    batch,
    c,
    py,
    report_of,
    survived,
)

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]

ORPHANS = """
import time
for _ in range(P['count']):
    child = os.fork()
    if child == 0:
        if os.fork() == 0:  # the grandchild outlives its parent: an orphan
            if P['setsid']:
                os.setsid()
            time.sleep(P['linger'])
            os._exit(0)
        os._exit(0)
    os.waitpid(child, 0)
report(orphans=P['count'])
"""

UNWAITED = """
import threading, time
kids = 0
for _ in range(40):
    if os.fork() == 0:
        os._exit(0)  # never waited for by this program: a zombie until someone reaps it
    kids += 1
for _ in range(10):
    threading.Thread(target=time.sleep, args=(100,), daemon=True).start()
report(kids=kids)
os._exit(0)  # leaves its zombies and its threads' process behind at once
"""

BASH_ORPHANS = """
for i in $(seq 30); do (sleep 0.2 &) ; done
for i in $(seq 10); do setsid sleep 100 & done
for i in $(seq 10); do sleep 100 & done
echo '{"done":true}'
exec sleep 0.5
"""


def test_clone_parent_children_are_reaped(gateway_url: str, health: SlotHealth) -> None:
    nr = CLONE_NR[os.uname().machine]
    results = batch(gateway_url, [py(CLONE_PARENT, nr=nr), py(CLONE_PARENT, nr=nr), c(C_CLONE), c(C_CLONE)])
    for result in results[:2]:
        survived(result)
        assert report_of(result) == {'silent': 30, 'signalled': 10, 'sleeping': 5}, result
    for result in results[2:]:
        survived(result)
        assert report_of(result) == {'silent': 25, 'signalled': 10, 'unwaited': 20}, result


def test_orphans_and_unwaited_children_are_reaped(gateway_url: str, health: SlotHealth) -> None:
    subs = [
        py(ORPHANS, count=30, setsid=False, linger=0.3),
        py(ORPHANS, count=20, setsid=True, linger=100),
        py(UNWAITED),
        bash(BASH_ORPHANS),
        py(UNWAITED),
        bash(BASH_ORPHANS),
    ]
    results = batch(gateway_url, subs)
    for result in results:
        survived(result)
    assert report_of(results[0]) == {'orphans': 30} and report_of(results[1]) == {'orphans': 20}, results[:2]
    assert report_of(results[2]) == {'kids': 40} and report_of(results[4]) == {'kids': 40}, results
    assert report_of(results[3]) == {'done': True} and report_of(results[5]) == {'done': True}, results


# --- from the main batch --------------------------------------------------------------------------


def test_no_process_outlives_thebatch(main_batch: MainBatch) -> None:
    # the fork bomb left 63 sleepers, the thread bomb 63 threads, two daemons were started
    assert main_batch.leftovers == {}, main_batch.leftovers


@pytest.mark.parametrize('variant', ['exit', 'linger'])
def test_setsid_daemons_do_not_outlive_the_execution(main_batch: MainBatch, variant: str) -> None:
    result = main_batch.results[f'daemon_{variant}']
    survived(result)
    got = report_of(result)
    popen_marker, fork_marker = main_batch.markers[f'{variant}_popen'], main_batch.markers[f'{variant}_fork']
    assert any(popen_marker in cmd for cmd in got['running']), got  # both daemons were really running
    assert any(fork_marker in cmd for cmd in got['running']), got
    assert got['popen_sid'] is True, got  # in a session of its own: a process-group kill would miss it
    if variant == 'linger':
        assert result['verdict'] == 'time_limit', result
    else:
        assert result['verdict'] == 'accepted', result
    assert main_batch.daemons_after == [], main_batch.daemons_after  # pgrep -f on the host, right after the answer
