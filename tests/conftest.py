"""Fixtures shared by every layer: the session's real stack (redis-server + prefork worker + uvicorn).

Nothing here starts a process at import or collection: the stack starts the first time a test asks
for `stack` or `gateway_url` (tests/unit asks for neither, and its conftest refuses them).

The end-to-end modules marked ``both_paths`` run on the transport paths ``JUDGE_TEST_PATHS`` names
(``fast`` by default, as in `make test`; ``stock`` in `make test-stock`; ``fast,stock`` for both):
their tests are parametrized by the session fixture `transport`, so pytest runs them on one stack per
path.  Every other test runs on the fast path.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes.stack import Stack, running_stack

PATHS = tuple(p.strip() for p in os.environ.get('JUDGE_TEST_PATHS', 'fast').split(',') if p.strip())
"""The paths ``both_paths`` tests run on (``JUDGE_TEST_PATHS``)."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize `transport`: every path of `PATHS` for ``both_paths`` tests, the fast path elsewhere."""
    if 'transport' in metafunc.fixturenames:
        paths = list(PATHS) if metafunc.definition.get_closest_marker('both_paths') else ['fast']
        if not paths or not set(paths) <= {'fast', 'stock'}:
            raise pytest.UsageError(f'JUDGE_TEST_PATHS must name fast and/or stock, not {PATHS}')
        metafunc.parametrize('transport', paths, indirect=True, scope='session')


@pytest.fixture(scope='session')
def transport(request: pytest.FixtureRequest) -> str:
    """The transport path of the stack under test (``fast`` or ``stock``)."""
    return str(request.param)


@pytest.fixture(scope='session')
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp('services')


@pytest.fixture(scope='session')
def stack(log_dir: Path, transport: str) -> Iterator[Stack]:
    if not shutil.which('redis-server'):
        pytest.fail('redis-server is not installed: run `make test`, which installs it')
    with running_stack(log_dir, transport) as stack:
        yield stack


@pytest.fixture(scope='session')
def gateway_url(stack: Stack) -> str:
    """Base URL of the real gateway, e.g. ``http://127.0.0.1:PORT``."""
    return stack.url
