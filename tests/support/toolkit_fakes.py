"""A fake gateway and small builders for the toolkit's unit tests.

The fake is a tiny aiohttp.web server on 127.0.0.1 that answers the batch routes by echoing each solution as
stdout and can inject faults (5xx, 429 + Retry-After, infra results, 413, slow answers, short answers).
Only toolkit, aiohttp and the standard library: the client-only venv of `make test-client` imports it."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

from toolkit import BatchPolicy, Result, RetryPolicy

Action = Callable[[list[dict[str, Any]]], Any]


@dataclasses.dataclass
class FakeGateway:
    """Answers batch routes by echoing each solution as stdout; ``script`` overrides request by request."""

    url: str = ''
    script: list[Any] = dataclasses.field(default_factory=list)
    batches: list[list[dict[str, Any]]] = dataclasses.field(default_factory=list)
    times: list[float] = dataclasses.field(default_factory=list)
    delay_s: float = 0.0
    in_flight: int = 0
    max_in_flight: int = 0
    max_items: int | None = None

    @staticmethod
    def result(sub: dict[str, Any], reason: str = '') -> dict[str, Any]:
        stdout = sub['solution']
        expected = sub.get('expected_output')
        ok = reason == '' and (expected is None or expected.strip() == stdout.strip())
        return {
            'sub_id': 'x',
            'success': ok,
            'run_success': reason == '',
            'cost': 0.01,
            'stdout': stdout if reason == '' else None,
            'stderr': '' if reason == '' else None,
            'reason': reason,
        }

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        subs = body['submissions']
        self.batches.append(subs)
        self.times.append(time.monotonic())
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            action = self.script.pop(0) if self.script else 'ok'
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if self.max_items is not None and len(subs) > self.max_items:
                return web.Response(status=413, text='too large')
            if isinstance(action, tuple) and action[0] == 'status':
                headers = {'Retry-After': str(action[2])} if len(action) > 2 else {}
                return web.Response(status=action[1], text='fault', headers=headers)
            if isinstance(action, tuple) and action[0] == 'sleep':
                await asyncio.sleep(action[1])
            if action == 'queue_timeout':
                return web.json_response({'sub_id': 'b', 'results': [self.result(s, 'queue_timeout') for s in subs]})
            if action == 'short':
                return web.json_response({'sub_id': 'b', 'results': []})
            if callable(action):
                return web.json_response({'sub_id': 'b', 'results': action(subs)})
            return web.json_response({'sub_id': 'b', 'results': [self.result(s) for s in subs]})
        finally:
            self.in_flight -= 1


@asynccontextmanager
async def fake_gateway(**kwargs: Any) -> AsyncIterator[FakeGateway]:
    gw = FakeGateway(**kwargs)
    app = web.Application()
    for path in ('/run/long-batch', '/judge/long-batch', '/run/batch'):
        app.router.add_post(path, gw.handle)

    async def ping(request: web.Request) -> web.Response:
        return web.json_response('pong')

    app.router.add_get('/ping', ping)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, '127.0.0.1', 0)
    await site.start()
    port = runner.addresses[0][1]
    gw.url = f'http://127.0.0.1:{port}'
    try:
        yield gw
    finally:
        await runner.cleanup()


def fast_policy(**kw: Any) -> BatchPolicy:
    retry = RetryPolicy(backoff_base_s=0.01, backoff_max_s=0.05, **kw.pop('retry', {}))
    return BatchPolicy(
        fill_wait_ms=kw.pop('fill_wait_ms', 2.0), deadline_s=kw.pop('deadline_s', 10.0), retry=retry, **kw
    )


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def make_result(**kw: Any) -> Result:
    base: dict[str, Any] = {'sub_id': 's', 'success': True, 'run_success': True, 'cost': 0.0, 'reason': ''}
    return Result(**(base | kw))


async def create(tool: Any, **kwargs: Any) -> str:
    """``tool.create`` for any verl shape: ``(id, response)`` (>= 0.6, or no verl) or ``id`` (0.4/0.5)."""
    created = await tool.create(**kwargs)
    if isinstance(created, str):
        return created
    iid, empty = created
    assert empty.text is None
    return str(iid)


def text_of(response: Any) -> str:
    """Text of a tool response: ``ToolResponse``/``TextResponse`` or a plain string (verl 0.4/0.5)."""
    return response if isinstance(response, str) else str(response.text)
