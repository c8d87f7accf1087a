"""The unit layer: pure logic, no service at all (no redis-server, Celery worker, gateway or slot server).

A unit test may run a short-lived interpreter or a shell script, or a fake on loopback in its own
event loop, but it never asks for the fixtures that start the real stack: this refuses, at collection,
any test under tests/unit that does (standard library and pytest only: the client-only venv loads it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SERVICE_FIXTURES = frozenset({'stack', 'gateway_url', 'transport', 'log_dir'})
"""The session fixtures of tests/conftest.py that start (or stand for) real services."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(item.path).resolve().is_relative_to(HERE):
            wanted = SERVICE_FIXTURES & set(getattr(item, 'fixturenames', ()))
            if wanted:
                raise pytest.UsageError(f'{item.nodeid}: a unit test may not use {sorted(wanted)}')
