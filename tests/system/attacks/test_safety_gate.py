"""The safety gate itself: what it proved about the slots before any attack ran (`run_safety_gate`)."""

from __future__ import annotations

import pytest

from tests.support.attacks.kit import PIDS_BOUND, SLOTS, SafetyInfo

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]


def test_safety_gate_established_isolation(safety_gate: SafetyInfo) -> None:
    assert len(safety_gate.slot_uids) == SLOTS and 0 not in safety_gate.slot_uids
    assert all(uid >= 1000 for uid in safety_gate.slot_uids)
    assert len({p['pidns'] for p in safety_gate.probes}) == SLOTS  # one private pid namespace per slot
    assert all(int(v) <= PIDS_BOUND for v in safety_gate.cgroups.values())
