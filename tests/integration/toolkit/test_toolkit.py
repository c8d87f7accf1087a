"""The client toolkit against the real stack (redis-server, Celery prefork worker, uvicorn gateway)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from aiohttp import web

import toolkit
from judge.stack import free_port, gateway_command, wait_port
from tests.support.processes.services import SERVER_PYTHON, Service
from tests.support.processes.stack import Stack
from toolkit import (
    BatchPolicy,
    DeadlineExceeded,
    JudgeUnavailable,
    RequestProcessor,
    Result,
    RetryPolicy,
    Submission,
    SyncJudgeClient,
    ToolkitError,
)

pytestmark = pytest.mark.integration

FAST_RETRY = RetryPolicy(backoff_base_s=0.05, backoff_max_s=0.2)


def policy(**kw: Any) -> BatchPolicy:
    return BatchPolicy(retry=kw.pop('retry', FAST_RETRY), **kw)


def test_512_concurrent_tool_calls_are_all_answered_correctly(gateway_url: str) -> None:
    async def main() -> None:
        tool = toolkit.PythonTool({'base_url': gateway_url, 'request_processor_batch_size': 32})

        async def call(i: int) -> tuple[str, dict[str, Any]]:
            iid, _ = await tool.create()
            try:
                resp, reward, metrics = await tool.execute(
                    iid, {'code': f'x = {i}\nprint(input())\nx * 3', 'input': 'hi'}
                )
            finally:
                await tool.release(iid)
            assert reward == 0.0
            return resp.text, metrics

        outs = await asyncio.wait_for(asyncio.gather(*(call(i) for i in range(512))), 240)
        for i, (text, metrics) in enumerate(outs):
            assert text.startswith(f'Tool call success\nstdout: hi\n{3 * i}\n\nexecution time: '), text
            assert metrics['infra_error'] is False
        stats = toolkit.get_shared(tool.base_url, tool.policy).stats()
        assert stats['answered'] == 512 and stats['errors'] == 0
        assert stats['mean_batch_size'] > 4  # calls were batched, not sent one by one
        await toolkit.close_shared()

    asyncio.run(main())


def test_jupyter_tool_keeps_state_and_reports_user_lines(gateway_url: str) -> None:
    async def main() -> None:
        tool = toolkit.JupyterTool({'base_url': gateway_url})
        iid, _ = await tool.create()
        texts = []
        for cell in ('import math\nr = 2', 'area = math.pi * r * r', 'round(area, 3)', 'print("so far")\nr / 0'):
            resp, _, _ = await tool.execute(iid, {'code': cell})
            texts.append(resp.text)
        assert texts[2].startswith('Tool call success\nstdout: 12.566\n')
        error = 'stderr: ZeroDivisionError at line 2: division by zero\n  r / 0'
        assert texts[3].startswith(f'Tool call failure\nreason: \nstdout: so far\n\n{error}')
        await toolkit.close_shared()

    asyncio.run(main())


def test_program_failures_are_answers_not_retried(gateway_url: str) -> None:
    async def main() -> None:
        async with RequestProcessor(gateway_url, policy()) as proc:
            crash, exit3, slow = await asyncio.gather(
                proc.submit(Submission('1/0')),
                proc.submit(Submission('import sys; sys.exit(3)')),
                proc.submit(Submission('import time; time.sleep(30)')),
            )
            assert (crash.run_success, crash.reason, crash.attempts) == (False, '', 1)
            assert (exit3.run_success, exit3.reason, exit3.attempts) == (False, '', 1)
            assert (slow.run_success, slow.reason, slow.attempts) == (False, 'worker_timeout', 1)
            assert proc.stats()['retries'] == 0

    asyncio.run(main())


@asynccontextmanager
async def faulty_proxy(target: str, faults: list[Any]) -> AsyncIterator[str]:
    """A loopback proxy to the real gateway that injects ``faults`` (one per request) before forwarding."""
    session = aiohttp.ClientSession()

    async def forward(request: web.Request) -> web.StreamResponse:
        fault = faults.pop(0) if faults else None
        if isinstance(fault, int):
            return web.Response(status=fault, text='injected', headers={'Retry-After': '0.1'})
        headers = {'Content-Type': 'application/json'}
        async with session.post(target + request.path, data=await request.read(), headers=headers) as up:
            body = await up.json()
        if fault == 'queue_timeout':
            for res in body['results']:
                res.update(success=False, run_success=False, reason='queue_timeout', stdout=None, stderr=None)
        return web.json_response(body)

    app = web.Application()
    app.router.add_post('/{tail:.*}', forward)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, '127.0.0.1', 0)
    await site.start()
    try:
        yield f'http://127.0.0.1:{runner.addresses[0][1]}'
    finally:
        await runner.cleanup()
        await session.close()


def test_infrastructure_failures_are_retried(gateway_url: str) -> None:
    async def main() -> None:
        faults: list[Any] = [503, 429, 'queue_timeout']
        async with faulty_proxy(gateway_url, faults) as url, RequestProcessor(url, policy()) as proc:
            results = await asyncio.gather(*(proc.submit(Submission(f'print({i})')) for i in range(4)))
            assert [r.stdout for r in results] == [f'{i}\n' for i in range(4)]
            assert all(r.ok and r.attempts == 4 for r in results)
            assert proc.stats()['retries'] == 12 and faults == []

    asyncio.run(main())


def test_deadline_always_answers(gateway_url: str) -> None:
    async def main() -> None:
        async with RequestProcessor(gateway_url, policy()) as proc:
            start = time.monotonic()
            outs = await proc.submit_many([Submission('import time; time.sleep(1.5)')] * 2, deadline_s=0.5)
            assert all(isinstance(o, DeadlineExceeded) for o in outs)
            assert time.monotonic() - start < 2.0  # deadline 0.5 s, plus slack for a loaded 2-core host
            quick = await proc.submit(Submission('print(7)'), deadline_s=30)
            assert quick.stdout == '7\n'

    asyncio.run(main())


def test_gateway_death_gives_clear_errors_by_the_deadline_then_recovers(stack: Stack) -> None:
    port = free_port()
    url = f'http://127.0.0.1:{port}'

    def start() -> Service:
        svc = Service(
            f'gateway-toolkit-{port}-{time.monotonic_ns()}',
            gateway_command(SERVER_PYTHON, port),
            stack.env,
            stack.log_dir,
        )
        wait_port(port, 30)
        return svc

    async def main() -> None:
        gateway = start()
        async with RequestProcessor(url, policy(max_batch_size=4, deadline_s=4.0)) as proc:
            assert (await proc.submit(Submission('print(1)'))).ok
            subs = [Submission('import time; time.sleep(0.3); print(2)') for _ in range(16)]
            task = asyncio.ensure_future(proc.submit_many(subs))
            await asyncio.sleep(0.2)
            gateway.proc.kill()
            began = time.monotonic()
            outs = await asyncio.wait_for(task, 8)
            assert time.monotonic() - began < 6.0  # every caller answered by its 4 s deadline (+ slack)
            errors = [o for o in outs if isinstance(o, ToolkitError)]
            assert errors and all(isinstance(e, JudgeUnavailable | DeadlineExceeded) for e in errors)
            assert all(o.ok for o in outs if isinstance(o, Result))
            gateway.stop()
            gateway = start()
            try:
                assert (await proc.submit(Submission('print(3)'))).stdout == '3\n'
            finally:
                gateway.stop()

    asyncio.run(main())


def test_sync_client_and_reward(gateway_url: str) -> None:
    from toolkit.rewards.passrate import TestCase, pass_rates_sync

    with SyncJudgeClient(gateway_url) as client:
        assert client.ping() and client.status()['num_workers'] >= 1
        assert client.run('print(input()[::-1])', input='abc').stdout == 'cba\n'
        judged = client.judge('print(6 * 7)', expected_output='42')
        assert judged.success and judged.stdout is None
        tests = [TestCase('2', '4'), TestCase('3', '6'), TestCase('5', '11')]
        [double, broken] = pass_rates_sync(
            [('print(int(input()) * 2)', tests), ('syntax error(', tests)], client=client
        )
        assert (double.passed, double.total, double.reliable) == (2, 3, True)
        assert (broken.rate, broken.reliable) == (0.0, True)


def test_rlinf_handler_on_real_gateway(gateway_url: str) -> None:
    from toolkit.rlinf import JudgeToolHandler, ToolChannelRequest

    async def main() -> None:
        handler = JudgeToolHandler(gateway_url)
        req = ToolChannelRequest(
            's', 'execute', 'python_code_with_standard_io', {'code': 'print(input())', 'input': 'z'}
        )
        reply = await handler.handle(req)
        assert reply.success and reply.result.startswith('Tool call success\nstdout: z\n')
        await toolkit.close_shared()

    asyncio.run(main())
