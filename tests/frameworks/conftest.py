"""Fixtures for framework tests (verl, RLinf, the client alone), run in their own virtualenvs.

These venvs hold the client and a framework, not the server: the real stack of ``tests/conftest.py``
(redis-server, Celery prefork worker, uvicorn gateway) runs with the server's Python, which
``JUDGE_SERVER_PYTHON`` names (the Makefile points it at ``.venv/bin/python``).
"""

from __future__ import annotations

import socket

import pytest


@pytest.fixture(scope='session')
def dead_url() -> str:
    """A loopback URL where nothing listens (a gateway that is down)."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    return f'http://127.0.0.1:{port}'
