"""Healing: slots heal themselves.

Whatever happens to a slot, the next submission routed to it gets a healthy slot within a bounded time,
and a submission caught by a failure of its slot is run again, transparently (`judge.sandbox.client`):
a slot server that dies is replaced, a zygote that dies is replaced by the server, and a server that
cannot bring its slot back to a clean state after an execution exits so that a fresh one replaces it.
Here the failures are caused from the host (this test process is root), since no submission can cause
them any more; the slot-health check around each case runs honest programs in every slot afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest

from tests.support.attacks.kit import SlotHealth, accepted, batch, py
from tests.support.processes.host_view import descendants, is_zygote, pids_cgroup_dir, slot_servers
from tests.support.processes.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]

SLOW_ANSWER = """
import time
time.sleep(P['sleep'])
print(6 * 7)
"""


def _inner_servers(stack: Stack) -> list[int]:
    """The slot servers inside their namespaces (each is pid 1 there: killing it ends its whole slot)."""
    below = descendants(stack.worker.proc.pid)
    servers = slot_servers(stack)
    return [pid for pid in servers if below[pid].ppid in servers]


def _zygotes(stack: Stack) -> list[int]:
    """The warm parents of the stack's slots."""
    below = descendants(stack.worker.proc.pid)
    return [pid for pid, proc in below.items() if is_zygote(proc) and 'judge.sandbox.zygote' in proc.cmdline]


def _kill_later(pids: list[int], delay_s: float) -> threading.Thread:
    def kill() -> None:
        time.sleep(delay_s)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    thread = threading.Thread(target=kill)
    thread.start()
    return thread


def test_a_submission_caught_by_a_dying_slot_server_is_retried(
    stack: Stack, gateway_url: str, health: SlotHealth
) -> None:
    health.restart_expected = True  # killing the servers is the point
    victims = _inner_servers(stack)
    assert len(victims) == 2, victims
    killer = _kill_later(victims, 0.5)
    results = batch(gateway_url, [py(SLOW_ANSWER, sleep=1.5)] * 2, route='/run/batch')
    killer.join()
    for result in results:
        accepted(result, '42\n')  # run again on a fresh server: not an infrastructure error
    assert not set(victims) & slot_servers(stack), 'the killed servers are still there'


def test_a_submission_caught_by_a_dying_zygote_is_retried_without_a_restart(
    stack: Stack, gateway_url: str, health: SlotHealth
) -> None:
    zygotes = _zygotes(stack)
    assert len(zygotes) >= 2, zygotes
    killer = _kill_later(zygotes, 0.5)
    results = batch(gateway_url, [py(SLOW_ANSWER, sleep=1.5)] * 2, route='/run/batch')
    killer.join()
    for result in results:
        accepted(result, '42\n')
    assert not set(zygotes) & set(_zygotes(stack)), 'the killed zygotes are still there'


def test_a_slot_that_cannot_be_cleaned_is_replaced(stack: Stack, gateway_url: str, health: SlotHealth) -> None:
    health.restart_expected = True  # a slot that cannot be made clean must be replaced
    before = slot_servers(stack)
    # A process of the host in each slot's pids cgroup: outside the slots' pid namespaces, so the servers
    # can neither kill nor reap it, and their slots never become empty after an execution.
    strangers = [subprocess.Popen(['sleep', '60']) for _ in health.gate.cgroups]
    try:
        for rel, stranger in zip(health.gate.cgroups, strangers, strict=True):
            (pids_cgroup_dir(rel) / 'cgroup.procs').write_text(str(stranger.pid))
        for result in batch(gateway_url, [py(SLOW_ANSWER, sleep=0.3)] * 4):
            accepted(result, '42\n')  # the answer goes out before the clean-up, or after a restart
        deadline = time.monotonic() + 20
        while slot_servers(stack) & before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not slot_servers(stack) & before, 'the servers kept slots they could not clean'
    finally:
        for stranger in strangers:
            stranger.kill()
            stranger.wait()
    for result in batch(gateway_url, [py(SLOW_ANSWER, sleep=0.3)] * 4):
        accepted(result, '42\n')  # fresh servers, started on demand
