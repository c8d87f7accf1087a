"""Upstream-compatible routes: `/run*`, `/judge*`, `/status`, `/ping`."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request, Response

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


def _json(data: Any) -> Response:
    # Results are built by our own code in the model's shape; skip re-validating thousands of them.
    return Response(json.dumps(data, separators=(',', ':'), ensure_ascii=False), media_type='application/json')


def _judge_view(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k not in _STREAMS}


async def _run(
    gateway: GatewayDep, request: Request, subs: list[Submission], route: str, batch_id: str
) -> list[dict[str, Any]]:
    payloads = [task_payload(s) for s in subs]
    return await gateway.dispatcher.run(payloads, gateway.routes[route], batch_id, request.is_disconnected)


@router.get('/ping')
async def ping() -> str:
    """Liveness: always `"pong"`."""
    return 'pong'


@router.post('/run', response_model=SubmissionResult)
async def run(sub: Submission, gateway: GatewayDep, request: Request) -> Response:
    """Run one submission (highest priority)."""
    (result,) = await _run(gateway, request, [sub], 'single', sub.sub_id or '')
    return _json(result)


@router.post('/judge', response_model=JudgeResult)
async def judge(sub: Submission, gateway: GatewayDep, request: Request) -> Response:
    """Judge one submission; like `/run` without the output streams."""
    (result,) = await _run(gateway, request, [sub], 'single', sub.sub_id or '')
    return _json(_judge_view(result))


async def _batch(batch: BatchSubmission, gateway: GatewayDep, request: Request, route: str, streams: bool) -> Response:
    results = await _run(gateway, request, batch.submissions, route, batch.sub_id or '')
    if not streams:
        results = [_judge_view(r) for r in results]
    return _json({'sub_id': batch.sub_id, 'results': results})


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
