"""Fixtures of the attack suite: the safety gate, the slot-health wrapper and the main batch.

Every attack runs through a real stack (redis-server, a prefork Celery worker with two sandbox slots,
the uvicorn gateway, over HTTP: the session's, or a module's own), and only after
`tests.support.attacks.kit.run_safety_gate` has proved that submissions run as a non-root uid, in a
private pid namespace and in bounded cgroups: the gate refuses otherwise (a skip, or a failure with
``JUDGE_REQUIRE_ATTACKS=1``), and nothing is submitted.

* ``safety_gate`` (autouse, per module) proves the gate once per stack before a module's first test.
* ``health`` wraps an attack in the slot-health check (`tests.support.attacks.kit.SlotHealth`).
* ``main_batch`` sends the suite's main batch (`tests.support.attacks.batch`) once per stack, after the
  gate, for the tests of every class file that check one of its cases.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.attacks.batch import MainBatch, run_main_batch
from tests.support.attacks.kit import SafetyInfo, SlotHealth, run_safety_gate
from tests.support.processes.stack import Stack

_GATES: dict[str, SafetyInfo] = {}
"""The gate's findings per gateway (the session's stack, or a module's own): proven once per stack."""
_CLEAN: dict[str, bool] = {}
"""Per gateway: whether the last test left the slots checked healthy, so that the next `health` need not
check them before its attack.  A test without the check (`forget_clean`) forgets it."""


def proven_gate(gateway_url: str) -> SafetyInfo:
    """The safety gate's findings for the stack behind ``gateway_url``, proven on first use (or a refusal)."""
    if gateway_url not in _GATES:
        _GATES[gateway_url] = run_safety_gate(gateway_url)
    return _GATES[gateway_url]


@pytest.fixture(scope='module', autouse=True)
def safety_gate(stack: Stack, gateway_url: str) -> SafetyInfo:
    """Refuse to run any attack of the module unless the isolation it relies on is proven."""
    return proven_gate(gateway_url)


@pytest.fixture(autouse=True)
def forget_clean(request: pytest.FixtureRequest, gateway_url: str) -> Iterator[None]:
    """A test that runs without the slot-health check may leave the slots in any state."""
    if 'health' not in request.fixturenames:
        _CLEAN.pop(gateway_url, None)
    yield


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


@pytest.fixture(scope='package')
def main_batch(stack: Stack, gateway_url: str) -> Iterator[MainBatch]:
    """The main batch's results and the host's state right after it, sent once the gate has passed."""
    with run_main_batch(stack, gateway_url, proven_gate(gateway_url)) as state:
        yield state
