"""Property-based fuzzing of the HTTP API from its own OpenAPI schema (schemathesis): no 5xx, ever.

Valid (positive) and schema-violating (negative) requests for every operation are sent to the
session gateway (real worker, real sandbox).  Bounded by ``FUZZ_MAX_EXAMPLES`` per operation
(default 30), without shrinking, so the file stays well under a minute and a half.

The schema comes from the gateway app itself (``api.main.app.openapi()``) so operations can be
parametrized at collection time; the calls go over HTTP to the running gateway.  (schemathesis'
own pytest plugin is not used: its 4.x releases break on pytest 9's node ids.)
"""

from __future__ import annotations

import os
from typing import Any

import pytest

schemathesis = pytest.importorskip('schemathesis')

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402

from api.main import app  # noqa: E402

pytestmark = pytest.mark.integration

MAX_EXAMPLES = int(os.environ.get('FUZZ_MAX_EXAMPLES', '30'))
SCHEMA = schemathesis.openapi.from_dict(app.openapi())
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]


def _strategy(operation: Any) -> Any:
    strategies = [operation.as_strategy(GenerationMode.POSITIVE)]
    try:
        strategies.append(operation.as_strategy(GenerationMode.NEGATIVE))
    except Exception:  # nothing can be invalid, e.g. GET /ping has no parameters
        pass
    return st.one_of(strategies)


def test_schema_lists_the_upstream_routes() -> None:
    labels = {op.label for op in OPERATIONS}
    assert {'POST /run', 'POST /run/batch', 'POST /run/long-batch', 'POST /judge', 'GET /status'} <= labels


@pytest.mark.parametrize('operation', OPERATIONS, ids=lambda op: op.label)
def test_no_server_errors(gateway_url: str, operation: Any) -> None:
    """Every generated request, valid or not, gets a non-5xx answer."""
    seen: list[int] = []

    @given(case=_strategy(operation))
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: report what was found, fast
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    def check(case: Any) -> None:
        response = case.call(base_url=gateway_url, timeout=60)
        seen.append(response.status_code)
        assert response.status_code < 500, (case.as_curl_command(), response.status_code, response.text[:500])

    check()
    assert seen, 'no request was sent'
