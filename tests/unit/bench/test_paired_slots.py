"""scripts.paired_slots: the figures it prints from the rounds, and the program each tree runs."""

from __future__ import annotations

import math

import pytest

from scripts import paired_slots


def test_the_summary_pairs_each_round_of_b_with_the_same_round_of_a() -> None:
    a = [2.0, 4.0, 2.0, 4.0]
    b = [2.2, 4.0, 2.1, 4.2]
    s = paired_slots.summary(a, b)
    assert s['a_ms'] == pytest.approx(3.0) and s['b_ms'] == pytest.approx(3.125)
    assert s['of_means'] == pytest.approx(3.125 / 3.0)
    ratios = [1.1, 1.0, 1.05, 1.05]
    assert s['ratio'] == pytest.approx(sum(ratios) / 4)
    spread = math.sqrt(sum((r - 1.05) ** 2 for r in ratios) / 3)
    assert s['ratio_se'] == pytest.approx(spread / 2)


def test_one_round_has_no_standard_error_and_rounds_must_pair() -> None:
    assert math.isnan(paired_slots.summary([1.0], [1.1])['ratio_se'])
    with pytest.raises(ValueError):
        paired_slots.summary([1.0, 2.0], [1.0])


def test_the_side_program_compiles_and_checks_every_answer() -> None:
    compile(paired_slots.SIDE, '<side>', 'exec')
    assert "!= b'45'" in paired_slots.SIDE and 'sandbox_cost' in paired_slots.SIDE
