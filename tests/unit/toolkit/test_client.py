"""The HTTP client (`toolkit.client`, `toolkit.models`): Retry-After, result validation, its connection pool."""

from __future__ import annotations

import asyncio

import pytest

from toolkit import Result
from toolkit.client import POOL_IDLE_S, JudgeClient, parse_retry_after
from toolkit.errors import BadResponse


def test_parse_retry_after() -> None:
    assert parse_retry_after('3') == 3.0
    assert parse_retry_after(' 0.5 ') == 0.5
    assert parse_retry_after(None) is None and parse_retry_after('soon') is None
    assert parse_retry_after('Wed, 21 Oct 2015 07:28:10 GMT', now_s=1445412480.0) == pytest.approx(10.0)


def test_result_from_json_validates() -> None:
    res = Result.from_json({'sub_id': 'a', 'success': True, 'run_success': True, 'cost': 1, 'stdout': 'x'})
    assert (res.ok, res.infra, res.cost, res.stdout, res.stderr) == (True, False, 1.0, 'x', None)
    for bad in ([], {'success': True}, {'success': 1, 'run_success': True, 'cost': 0}):
        with pytest.raises(BadResponse):
            Result.from_json(bad)


def test_the_pool_keeps_idle_connections_as_long_as_asked() -> None:
    async def idle_s(client: JudgeClient) -> float:
        session = client._get_session()
        try:
            return float(session.connector._keepalive_timeout)  # type: ignore[union-attr]
        finally:
            await session.close()

    assert asyncio.run(idle_s(JudgeClient())) == POOL_IDLE_S
    assert asyncio.run(idle_s(JudgeClient(pool_idle_s=2.5))) == 2.5
