"""The gateway keeps idle connections open longer than the toolkit's client keeps them in its pool."""

from __future__ import annotations

from typing import Any

import pytest

import api.cli
from judge.settings import Settings
from toolkit.client import POOL_IDLE_S


def test_the_gateway_outlasts_the_clients_pool() -> None:
    # A client that reuses a pooled connection the server has just closed loses that request.
    assert Settings().gateway_keep_alive_s > POOL_IDLE_S


def test_uvicorn_is_given_the_keep_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('JUDGE_GATEWAY_KEEP_ALIVE_S', '90')
    api.cli.get_settings.cache_clear()
    given: dict[str, Any] = {}
    monkeypatch.setattr(api.cli, 'name_process', lambda name: None)
    monkeypatch.setattr(api.cli.uvicorn, 'run', lambda app, **kwargs: given.update(kwargs))
    try:
        api.cli.gateway(['--port', '1'])
    finally:
        api.cli.get_settings.cache_clear()
    assert given['timeout_keep_alive'] == 90 and given['port'] == 1
