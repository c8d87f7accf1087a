"""The HTTP client's parsing (`toolkit.client`, `toolkit.models`): Retry-After and result validation."""

from __future__ import annotations

import pytest

from toolkit import Result
from toolkit.client import parse_retry_after
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
