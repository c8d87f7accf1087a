"""Class 2: processes reparented to the slot's warm parent or server, and zombies nobody waits for.

Every process ever charged to a slot must be reaped: the zygote is the slot's child subreaper and reaps
every child (``__WALL``: also clones that asked for no exit signal), and the server waits after each
execution until the slot's pids cgroup is empty.  The health check after each attack forks 48 processes
and starts 20 threads in every slot (the budget is 64) and checks on the host that each slot's pids
cgroup holds nothing but its spare.
"""

from __future__ import annotations

import os

from tests.support.attack_kit import (
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
