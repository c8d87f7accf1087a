"""Upstream-compatible routes: `/run*`, `/judge*`, `/status`, `/ping`."""

from __future__ import annotations

import json
import time
from typing import Any

from fastapi import APIRouter, Request, Response

from api import metrics
from api.access import log_request, trace_id
from api.backpressure import InFlight
from api.deps import GatewayDep
from api.status import collect_status
from judge.contracts import (
    BatchJudgeResult,
    BatchSubmission,
    BatchSubmissionResult,
    JudgeResult,
    StatusResult,
    Submission,
    SubmissionResult,
    task_payload,
)

router = APIRouter()

_STREAMS = ('stdout', 'stderr')


def json_response(data: Any) -> Response:
    """A JSON answer built by our own code in the declared model's shape."""
    # Results are built by our own code in the model's shape; skip re-validating thousands of them.
    return Response(json.dumps(data, separators=(',', ':'), ensure_ascii=False), media_type='application/json')


def _judge_view(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k not in _STREAMS}


async def _run(
    gateway: GatewayDep, request: Request, subs: list[Submission], route: str, batch_id: str
) -> list[dict[str, Any]]:
    in_flight: InFlight = request.app.state.in_flight
    n = len(subs)
    in_flight.acquire(n)  # 413/429 before anything is enqueued
    started = time.perf_counter()
    trace = trace_id(request)
    label = f'{batch_id}/{trace}' if trace else batch_id  # appears in every worker log line of the batch
    try:
        payloads = [task_payload(s) for s in subs]
        results = await gateway.dispatcher.run(payloads, gateway.routes[route], label, request.is_disconnected)
    finally:
        in_flight.release(n)
    elapsed = time.perf_counter() - started
    metrics.record(request.scope['path'], subs, results, elapsed)
    log_request(request.scope['path'], label, subs, results, elapsed)
    return results


@router.get('/ping')
async def ping() -> str:
    """Liveness: always `"pong"`."""
    return 'pong'


@router.post('/run', response_model=SubmissionResult)
async def run(sub: Submission, gateway: GatewayDep, request: Request) -> Response:
    """Run one submission (highest priority)."""
    (result,) = await _run(gateway, request, [sub], 'single', sub.sub_id or '')
    return json_response(result)


@router.post('/judge', response_model=JudgeResult)
async def judge(sub: Submission, gateway: GatewayDep, request: Request) -> Response:
    """Judge one submission; like `/run` without the output streams."""
    (result,) = await _run(gateway, request, [sub], 'single', sub.sub_id or '')
    return json_response(_judge_view(result))


async def _batch(batch: BatchSubmission, gateway: GatewayDep, request: Request, route: str, streams: bool) -> Response:
    results = await _run(gateway, request, batch.submissions, route, batch.sub_id or '')
    if not streams:
        results = [_judge_view(r) for r in results]
    return json_response({'sub_id': batch.sub_id, 'results': results})


@router.post('/run/batch', response_model=BatchSubmissionResult)
async def run_batch(batch: BatchSubmission, gateway: GatewayDep, request: Request) -> Response:
    """Run a batch with the normal deadline; results in submission order."""
    return await _batch(batch, gateway, request, 'batch', True)


@router.post('/run/long-batch', response_model=BatchSubmissionResult)
async def run_long_batch(batch: BatchSubmission, gateway: GatewayDep, request: Request) -> Response:
    """Run a batch with the long deadline (lowest priority, never dropped for queue age)."""
    return await _batch(batch, gateway, request, 'long', True)


@router.post('/judge/batch', response_model=BatchJudgeResult)
async def judge_batch(batch: BatchSubmission, gateway: GatewayDep, request: Request) -> Response:
    """Judge a batch with the normal deadline."""
    return await _batch(batch, gateway, request, 'batch', False)


@router.post('/judge/long-batch', response_model=BatchJudgeResult)
async def judge_long_batch(batch: BatchSubmission, gateway: GatewayDep, request: Request) -> Response:
    """Judge a batch with the long deadline."""
    return await _batch(batch, gateway, request, 'long', False)


@router.get('/status', response_model=StatusResult)
async def status(gateway: GatewayDep) -> dict[str, Any]:
    """Queue depth and live workers (upstream keys `queue`, `num_workers`, plus detail)."""
    return await collect_status(gateway)
