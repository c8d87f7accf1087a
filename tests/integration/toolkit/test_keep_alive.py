"""HTTP keep-alive of the real gateway (uvicorn), which the toolkit client relies on (`POOL_IDLE_S`)."""

from __future__ import annotations

import http.client
import json
import time
from urllib.parse import urlsplit

import pytest

pytestmark = [pytest.mark.integration]


def test_an_idle_keep_alive_connection_still_answers(gateway_url: str) -> None:
    """A client's pooled connection, idle longer than uvicorn's own 5 s keep-alive, is still served
    (`JUDGE_GATEWAY_KEEP_ALIVE_S`): the gateway closing it would fail the client's next request."""
    where = urlsplit(gateway_url)
    conn = http.client.HTTPConnection(where.hostname or '', where.port, timeout=30)
    try:
        sockets = []
        for pause_s in (0.0, 6.0):
            time.sleep(pause_s)
            conn.request('GET', '/status')
            answer = conn.getresponse()
            assert answer.status == 200 and 'num_workers' in json.loads(answer.read()), pause_s
            sockets.append(conn.sock)
        assert sockets[0] is sockets[1] is not None  # one connection, kept open while idle
    finally:
        conn.close()
