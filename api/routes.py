"""Upstream-compatible routes: `/run*`, `/judge*`, `/status`, `/ping`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from api.deps import GatewayDep
from api.status import collect_status
from api.submit import json_response, submit
from judge.contracts import (
    BatchJudgeResult,
    BatchSubmission,
    BatchSubmissionResult,
    JudgeResult,
    StatusResult,
    Submission,
    SubmissionResult,
)
from judge.results import judge_view
from judge.transport.lanes import Lane

router = APIRouter()


@router.get('/ping')
async def ping() -> str:
    """Liveness: always `"pong"`."""
    return 'pong'


@router.post('/run', response_model=SubmissionResult)
async def run(sub: Submission, gateway: GatewayDep, request: Request) -> Response:
    """Run one submission (highest priority)."""
    (result,) = await submit(gateway, request, [sub.payload()], gateway.lanes.single, sub.sub_id or '')
    return json_response(result)


@router.post('/judge', response_model=JudgeResult)
async def judge(sub: Submission, gateway: GatewayDep, request: Request) -> Response:
    """Judge one submission; like `/run` without the output streams."""
    (result,) = await submit(gateway, request, [sub.payload()], gateway.lanes.single, sub.sub_id or '')
    return json_response(judge_view(result))


async def _batch(batch: BatchSubmission, gateway: GatewayDep, request: Request, lane: Lane, streams: bool) -> Response:
    payloads = [s.payload() for s in batch.submissions]
    results: list[Any] = await submit(gateway, request, payloads, lane, batch.sub_id or '')
    if not streams:
        results = [judge_view(r) for r in results]
    return json_response({'sub_id': batch.sub_id, 'results': results})


@router.post('/run/batch', response_model=BatchSubmissionResult)
async def run_batch(batch: BatchSubmission, gateway: GatewayDep, request: Request) -> Response:
    """Run a batch with the normal deadline; results in submission order."""
    return await _batch(batch, gateway, request, gateway.lanes.batch, True)


@router.post('/run/long-batch', response_model=BatchSubmissionResult)
async def run_long_batch(batch: BatchSubmission, gateway: GatewayDep, request: Request) -> Response:
    """Run a batch with the long deadline (lowest priority, never dropped for queue age)."""
    return await _batch(batch, gateway, request, gateway.lanes.long, True)


@router.post('/judge/batch', response_model=BatchJudgeResult)
async def judge_batch(batch: BatchSubmission, gateway: GatewayDep, request: Request) -> Response:
    """Judge a batch with the normal deadline."""
    return await _batch(batch, gateway, request, gateway.lanes.batch, False)


@router.post('/judge/long-batch', response_model=BatchJudgeResult)
async def judge_long_batch(batch: BatchSubmission, gateway: GatewayDep, request: Request) -> Response:
    """Judge a batch with the long deadline."""
    return await _batch(batch, gateway, request, gateway.lanes.long, False)


@router.get('/status', response_model=StatusResult)
async def status(gateway: GatewayDep) -> dict[str, Any]:
    """Queue depth and live workers (upstream keys `queue`, `num_workers`, plus detail)."""
    return await collect_status(gateway)
