"""The synchronous client (`toolkit.sync.SyncJudgeClient`): thread-safe, closed for good once closed."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tests.support.toolkit_fakes import fake_gateway, fast_policy
from toolkit import ProcessorClosed, Result, SyncJudgeClient


def test_sync_client_is_thread_safe() -> None:
    ready = threading.Event()
    box: dict[str, Any] = {}

    def serve() -> None:
        async def main() -> None:
            async with fake_gateway() as gw:
                box['url'] = gw.url
                ready.set()
                while 'stop' not in box:
                    await asyncio.sleep(0.02)

        asyncio.run(main())

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    assert ready.wait(10)
    try:
        with SyncJudgeClient(box['url'], fast_policy()) as client:
            outs: dict[int, Result] = {}

            def worker(i: int) -> None:
                outs[i] = client.run(f'print({i})')

            threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(20)
            assert [outs[i].stdout for i in range(16)] == [f'print({i})' for i in range(16)]
            assert client.judge('42', expected_output='42\n').success
            assert client.ping()
            assert client.stats()['/run/long-batch']['answered'] == 16
        with pytest.raises(ProcessorClosed):
            client.run('x')
        client.close()  # idempotent
    finally:
        box['stop'] = True
        server.join(5)
