"""The sandbox comes through: every case of the main batch gets a normal verdict (never an infrastructure
error) in a bounded time, and the slots still work when every attack file has run (this file runs last)."""

from __future__ import annotations

import pytest

from tests.support.attacks.batch import MainBatch
from tests.support.attacks.kit import SafetyInfo, batch
from tests.support.processes.host_view import settled_slot_leftovers
from tests.support.processes.stack import TIME_LIMIT_S, Stack

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]


def test_main_batch_survived_every_attack(main_batch: MainBatch) -> None:
    for name, result in main_batch.results.items():
        assert result['verdict'] not in ('internal_error', 'queue_timeout'), (name, result)
        assert not result.get('error'), (name, result)
    # two 4 s wall-clock cases run side by side; everything else is quick (generous bound: shared machine)
    assert main_batch.wall_s < 5 * TIME_LIMIT_S, main_batch.wall_s


def test_zz_slots_still_work_after_the_attacks(stack: Stack, gateway_url: str, safety_gate: SafetyInfo) -> None:
    results = batch(gateway_url, [{'type': 'python', 'solution': 'print(1)', 'expected_output': '1'}] * 4)
    for result in results:
        assert (result['verdict'], result['success'], result['stdout']) == ('accepted', True, '1\n'), result
    assert settled_slot_leftovers(safety_gate.slot_uids) == {}
    assert stack.worker.proc.poll() is None
