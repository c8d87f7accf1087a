"""Shared processors (`toolkit.shared.get_shared`): one per event loop, base URL and policy."""

from __future__ import annotations

import toolkit
from tests.support.toolkit_fakes import run
from toolkit import BatchPolicy, RequestProcessor


def test_get_shared_is_per_loop_url_and_policy() -> None:
    async def main() -> tuple[RequestProcessor, RequestProcessor]:
        a = toolkit.get_shared('http://127.0.0.1:9')
        assert toolkit.get_shared('http://127.0.0.1:9/') is a
        assert toolkit.get_shared('http://127.0.0.1:9', BatchPolicy(max_batch_size=3)) is not a
        await toolkit.close_shared()
        b = toolkit.get_shared('http://127.0.0.1:9')
        assert b is not a and a.closed
        await toolkit.close_shared()
        return a, b

    a1, _ = run(main())
    a2, _ = run(main())
    assert a1 is not a2  # a new event loop gets its own processor
