"""Shared secrets: what submissions share (the ``str`` hash secret, the address-space layout).

Warm Python children share what their zygote had when it started; a zygote is a fresh interpreter and
is replaced after ``JUDGE_WARM_RENEW_EXECS`` executions (``JUDGE_WARM_SCIENTIFIC_RENEW_EXECS`` for the
scientific parent) or ``JUDGE_WARM_RENEW_S`` seconds (`judge.sandbox.server.warm.lineage`).  This module
runs its own stack (redis, worker, gateway) with small bounds (6 executions, 2 seconds), so that renewals
happen within the test; compiled and bash programs are
exec'd, so every run has its own layout and seeds anyway.  What stays shared within one zygote's
lifetime is listed in docs/attacks.md.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.attacks.kit import SlotHealth, bash, batch, c, py, report_of, survived
from tests.support.processes.stack import Stack, running_stack

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]

RENEW_EXECS = 6
RENEW_S = 2.0

SECRETS = """
import ctypes, random, time
time.sleep(P['sleep'])
buf = ctypes.create_string_buffer(16)
report(slot=slot(), hash=hash('judge-secret'), obj=id(object()), buf=ctypes.addressof(buf),
       libc=ctypes.cast(ctypes.CDLL(None).printf, ctypes.c_void_p).value, rand=random.random(), pid=os.getpid())
"""

C_LAYOUT = r"""
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    int local;
    void *heap = malloc(64);
    printf("{\"stack\":%lu,\"heap\":%lu,\"code\":%lu,\"libc\":%lu}\n", (unsigned long)&local,
           (unsigned long)heap, (unsigned long)&main, (unsigned long)&printf);
    return 0;
}
"""

BASH_SEEDS = 'echo "{\\"random\\":$RANDOM$RANDOM,\\"srandom\\":$SRANDOM,\\"pid\\":$$}"\n'


@pytest.fixture(scope='module')
def stack(log_dir: Path, transport: str) -> Iterator[Stack]:
    """A stack of its own, on the path under test, whose warm parents are renewed every few executions or seconds."""
    overrides = {
        'JUDGE_WARM_RENEW_EXECS': str(RENEW_EXECS),
        'JUDGE_WARM_SCIENTIFIC_RENEW_EXECS': str(RENEW_EXECS),
        'JUDGE_WARM_RENEW_S': str(RENEW_S),
    }
    with running_stack(log_dir, transport, tag='test-renew', overrides=overrides, worker_name='renew') as stack:
        yield stack


@pytest.fixture(scope='module')
def gateway_url(stack: Stack) -> str:
    return stack.url


def _per_slot(url: str) -> dict[str, dict[str, Any]]:
    """One secrets report per slot."""
    seen: dict[str, dict[str, Any]] = {}
    for _ in range(4):
        for result in batch(url, [py(SECRETS, sleep=0.3)] * 2, route='/run/batch'):
            survived(result)
            got = report_of(result)
            seen.setdefault(got['slot'], got)
        if len(seen) == 2:
            return seen
    raise AssertionError(f'the probes reached only {sorted(seen)}')


def test_warm_parents_are_renewed_after_a_bounded_number_of_executions(gateway_url: str, health: SlotHealth) -> None:
    first = _per_slot(gateway_url)
    trivial = [{'type': 'python', 'solution': 'print(1)', 'expected_output': '1'}] * (4 * RENEW_EXECS)
    for result in batch(gateway_url, trivial):
        assert result['verdict'] == 'accepted', result
    second = _per_slot(gateway_url)
    for slot, before in first.items():
        after = second[slot]
        # a new interpreter: another str hash secret, other addresses for the heap and the libraries
        assert after['hash'] != before['hash'], (slot, before, after)
        assert after['buf'] != before['buf'] and after['libc'] != before['libc'], (slot, before, after)
    rands = [r['rand'] for r in (*first.values(), *second.values())]
    assert len(set(rands)) == len(rands), rands  # `random` is reseeded in every child


def test_idle_warm_parents_are_renewed_after_a_bounded_time(gateway_url: str, health: SlotHealth) -> None:
    first = _per_slot(gateway_url)
    time.sleep(RENEW_S + 1.5)  # idle: the servers renew their zygotes in the background
    second = _per_slot(gateway_url)
    for slot, before in first.items():
        assert second[slot]['hash'] != before['hash'], (slot, before, second[slot])


def test_exec_d_programs_never_share_a_layout_or_seeds(gateway_url: str, health: SlotHealth) -> None:
    results = batch(gateway_url, [c(C_LAYOUT)] * 4 + [bash(BASH_SEEDS)] * 4)
    reports = [report_of(r) for r in results]
    for result in results:
        survived(result)
    layouts = reports[:4]
    for key in ('stack', 'heap'):
        assert len({r[key] for r in layouts}) == 4, layouts
    seeds = reports[4:]
    assert len({r['random'] for r in seeds}) == 4 and len({r['srandom'] for r in seeds}) == 4, seeds
