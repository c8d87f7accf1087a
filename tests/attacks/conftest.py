"""Fixtures of the second attack suite (issue 17): the safety gate and the slot-health wrapper.

Every attack here runs through the session's real stack (redis-server, a prefork Celery worker with two
sandbox slots, the uvicorn gateway, over HTTP), only after `tests.attack_kit.run_safety_gate` has
proved that submissions are non-root, in a private pid namespace and in bounded cgroups.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.attack_kit import SafetyInfo, SlotHealth, run_safety_gate
from tests.support.stack import Stack

_GATES: dict[str, SafetyInfo] = {}
"""The gate's findings per gateway (the session's stack, or a module's own): proven once per stack."""
_CLEAN: dict[str, bool] = {}
"""Per gateway: whether the last attack left the slots checked healthy (the next need not re-check).
The attack files run one after the other (this directory comes first), so nothing runs in between."""


@pytest.fixture(scope='module', autouse=True)
def safety_gate(stack: Stack, gateway_url: str) -> SafetyInfo:
    """Refuse to run any attack of the module unless the isolation it relies on is proven."""
    if gateway_url not in _GATES:
        _GATES[gateway_url] = run_safety_gate(gateway_url)
    return _GATES[gateway_url]


@pytest.fixture
def health(stack: Stack, gateway_url: str, safety_gate: SafetyInfo) -> Iterator[SlotHealth]:
    """Healthy slots before the attack and after it, with the same slot servers (see `SlotHealth`)."""
    checker = SlotHealth(stack, gateway_url, safety_gate)
    if _CLEAN.pop(gateway_url, False):
        checker.servers = checker.current_servers()
    else:
        checker.before()
    yield checker
    checker.after()
    _CLEAN[gateway_url] = not checker.restart_expected
