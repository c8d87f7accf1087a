"""Fixtures of the second attack suite (issue 17): the safety gate and the slot-health wrapper.

Every attack here runs through the session's real stack (redis-server, a prefork Celery worker with two
sandbox slots, the uvicorn gateway, over HTTP), only after `tests.attack_kit.run_safety_gate` has
proved that submissions are non-root, in a private pid namespace and in bounded cgroups.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.attack_kit import SafetyInfo, SlotHealth, run_safety_gate
from tests.conftest import Stack


@pytest.fixture(scope='module', autouse=True)
def safety_gate(stack: Stack, gateway_url: str) -> SafetyInfo:
    """Refuse to run any attack of the module unless the isolation it relies on is proven."""
    return run_safety_gate(gateway_url)


@pytest.fixture(scope='module')
def _clean_slots() -> dict[str, bool]:
    """Whether the module's last attack left the slots checked healthy (the next one need not re-check)."""
    return {'clean': False}


@pytest.fixture
def health(
    stack: Stack, gateway_url: str, safety_gate: SafetyInfo, _clean_slots: dict[str, bool]
) -> Iterator[SlotHealth]:
    """Healthy slots before the attack and after it, with the same slot servers (see `SlotHealth`)."""
    checker = SlotHealth(stack, gateway_url, safety_gate)
    if _clean_slots['clean']:
        checker.servers = checker.current_servers()
    else:
        checker.before()
    _clean_slots['clean'] = False
    yield checker
    checker.after()
    _clean_slots['clean'] = not checker.restart_expected
