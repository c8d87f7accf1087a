"""The one way a route submits work: admission, dispatch, metrics and the access log.

Every submitting route (`/run*`, `/judge*`, `/judge/tests*`, and the compatible doors' routes,
`api.doors`) calls `submit`, so each gets the same back-pressure (413/429 before anything is
enqueued), trace id (``X-Request-ID``), Prometheus metrics (with the door's name for a door) and
access-log line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import Request, Response

from api.backpressure import InFlight
from api.deps import Gateway
from api.observe import metrics
from api.observe.access import log_request, trace_id
from judge.contracts import ResultDict, RunPayload
from judge.transport.gateway.lanes import Lane

logger = logging.getLogger('api.routes.submit')


def json_response(data: Any) -> Response:
    """A JSON answer built by `judge.results` in the declared model's shape (not re-validated)."""
    return Response(json.dumps(data, separators=(',', ':'), ensure_ascii=False), media_type='application/json')


async def submit(
    gateway: Gateway,
    request: Request,
    payloads: list[RunPayload],
    lane: Lane,
    batch_id: str,
    door: str = '',
) -> list[ResultDict]:
    """Run ``payloads`` on ``lane``, within its deadline; results in order (``door``: the compatible
    API the request came through, for the metrics)."""
    in_flight: InFlight = request.app.state.in_flight
    n = len(payloads)
    await in_flight.acquire(n)  # 413/429 before anything is enqueued
    return await _run(gateway, in_flight, request, payloads, lane, batch_id, door, request.is_disconnected)


async def submit_later(
    gateway: Gateway,
    request: Request,
    payloads: list[RunPayload],
    lane: Lane,
    batch_id: str,
    door: str,
    done: Callable[[list[ResultDict]], Awaitable[None]],
) -> None:
    """Admit ``payloads`` now (413/429 raised before anything is enqueued), then run them in the
    background and hand their results to ``done``: for a client that fetches them later (Judge0's
    submissions without ``wait``), so its going away cancels nothing."""
    in_flight: InFlight = request.app.state.in_flight
    n = len(payloads)
    await in_flight.acquire(n)
    copy = _Detached(request.scope['path'], trace_id(request))

    async def work() -> None:
        results = await _run(gateway, in_flight, copy, payloads, lane, batch_id, door, None)
        await done(results)

    task = asyncio.get_running_loop().create_task(work())
    _background.add(task)
    task.add_done_callback(_finished)


class _Detached:
    """What `_run` needs of a request that was answered before its submissions ran."""

    def __init__(self, path: str, trace: str) -> None:
        self.scope = {'path': path}
        self.trace = trace


_background: set[asyncio.Task[None]] = set()
"""`submit_later`'s running tasks (held, so that they are not collected before they end)."""


def _finished(task: asyncio.Task[None]) -> None:
    _background.discard(task)
    if not task.cancelled() and task.exception() is not None:
        logger.error('a background request failed', exc_info=task.exception())


async def _run(
    gateway: Gateway,
    in_flight: InFlight,
    request: Request | _Detached,
    payloads: list[RunPayload],
    lane: Lane,
    batch_id: str,
    door: str,
    disconnected: Callable[[], Awaitable[bool]] | None,
) -> list[ResultDict]:
    n = len(payloads)
    started = time.perf_counter()
    trace = request.trace if isinstance(request, _Detached) else trace_id(request)
    label = f'{batch_id}/{trace}' if trace else batch_id  # appears in every worker log line of the batch
    try:
        results = await gateway.router.run(payloads, lane, label, disconnected)
    finally:
        in_flight.release(n)
    elapsed = time.perf_counter() - started
    path = request.scope['path']
    metrics.record(path, payloads, results, elapsed, door)
    log_request(path, label, payloads, results, elapsed)
    return results
