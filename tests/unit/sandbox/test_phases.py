"""The slot server's phase clock (`judge.sandbox.server.phases`): CPU goes to the phase it was spent in."""

from __future__ import annotations

import time

from judge.sandbox.server.phases import NoPhases, PhaseClock


def _burn_s(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_each_lap_charges_the_cpu_since_the_last_one() -> None:
    clock = PhaseClock()
    _burn_s(0.03)
    clock.lap('busy')
    time.sleep(0.03)  # no CPU
    clock.lap('idle')
    _burn_s(0.01)
    clock.lap('busy')
    clock.executed()
    taken = clock.take()
    assert taken['executions'] == 1
    ns = taken['ns']
    assert isinstance(ns, dict)
    assert ns['busy'] >= 40_000_000, ns
    assert ns['idle'] < 10_000_000, ns


def test_take_starts_again_from_zero() -> None:
    clock = PhaseClock()
    _burn_s(0.02)
    clock.take()
    clock.lap('after')
    taken = clock.take()
    assert taken['executions'] == 0
    assert taken['ns']['after'] < 10_000_000  # type: ignore[index]
    assert clock.take() == {'executions': 0, 'ns': {}}


def test_the_clock_that_is_off_keeps_nothing() -> None:
    clock = NoPhases()
    _burn_s(0.01)
    clock.lap('busy')
    clock.executed()
    assert clock.take() == {'executions': 0, 'ns': {}}
