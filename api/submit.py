"""The one way a route submits work: admission, dispatch, metrics and the access log.

Every submitting route (`/run*`, `/judge*`, `/judge/tests*`, and the compatible doors' routes,
`api.doors`) calls `submit`, so each gets the same back-pressure (413/429 before anything is
enqueued), trace id (``X-Request-ID``), Prometheus metrics (with the door's name for a door) and
access-log line.
"""

from __future__ import annotations

import json
import time
from typing import Any

from fastapi import Request, Response

from api import metrics
from api.access import log_request, trace_id
from api.backpressure import InFlight
from api.deps import Gateway
from judge.contracts import ResultDict, RunPayload
from judge.transport.lanes import Lane


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
    started = time.perf_counter()
    trace = trace_id(request)
    label = f'{batch_id}/{trace}' if trace else batch_id  # appears in every worker log line of the batch
    try:
        results = await gateway.router.run(payloads, lane, label, request.is_disconnected)
    finally:
        in_flight.release(n)
    elapsed = time.perf_counter() - started
    path = request.scope['path']
    metrics.record(path, payloads, results, elapsed, door)
    log_request(path, label, payloads, results, elapsed)
    return results
