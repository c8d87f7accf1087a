"""`POST /judge/tests`: one solution, many tests, one answer with per-test verdicts and a pass rate.

Each test is one Celery task (the existing `Dispatcher`, one payload per test, carrying the checker
name), so a job's tests run in parallel on every free slot.  The solution is compiled once per node:
the first task to reach a node compiles into the node's content-addressed cache under an ``flock``
and the others wait for it, then hit.  A compile error therefore fails every test with
``compile_error``.

Deadlines: `/judge/tests` and `/judge/tests/batch` queue with the batch priority but wait up to the
long-batch deadline (a job of many tests cannot finish in one submission's deadline);
`/judge/tests/long-batch` uses the long-batch queue and priority.

``stop_on_first_failure`` cuts the *reported* list after the first failing test; every test is
still judged (they run in parallel, so cancelling would save little), and ``passed``/``pass_rate``
count them all.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from fastapi import APIRouter, Request, Response

from api.deps import GatewayDep
from api.routes import json_response
from judge.contracts import (
    BatchJudgeTestsRequest,
    BatchJudgeTestsResult,
    JudgeTestsRequest,
    JudgeTestsResult,
    judge_tests_payloads,
    summarize_tests,
)

router = APIRouter()


async def _judge(
    gateway: GatewayDep, request: Request, jobs: list[JudgeTestsRequest], route: str, batch_id: str
) -> list[dict[str, Any]]:
    """Run every test of every job as one dispatch; fold each job's results."""
    payloads: list[dict[str, Any]] = []
    spans: list[tuple[int, int]] = []
    for job in jobs:
        start = len(payloads)
        payloads.extend(judge_tests_payloads(job))
        spans.append((start, len(payloads)))
    chosen = gateway.routes[route]
    if route == 'batch':  # many tests take longer than one submission: the batch priority, the long deadline
        chosen = dataclasses.replace(chosen, wait_s=max(chosen.wait_s, gateway.routes['long'].wait_s))
    in_flight = request.app.state.in_flight
    in_flight.acquire(len(payloads))  # the same back-pressure as the other routes, before anything is enqueued
    try:
        results = await gateway.dispatcher.run(payloads, chosen, batch_id, request.is_disconnected)
    finally:
        in_flight.release(len(payloads))
    return [summarize_tests(job, results[a:b]) for job, (a, b) in zip(jobs, spans, strict=True)]


def _check_size(gateway: GatewayDep, jobs: list[JudgeTestsRequest]) -> Response | None:
    total = sum(len(job.tests) for job in jobs)
    limit = gateway.settings.max_batch_size
    if total > limit:
        detail = f'{total} tests exceed JUDGE_MAX_BATCH_SIZE={limit}'
        return Response(json.dumps({'detail': detail}), status_code=413, media_type='application/json')
    return None


@router.post('/judge/tests', response_model=JudgeTestsResult)
async def judge_tests(job: JudgeTestsRequest, gateway: GatewayDep, request: Request) -> Response:
    """Judge one solution on many tests (normal batch priority and deadline)."""
    too_big = _check_size(gateway, [job])
    if too_big is not None:
        return too_big
    (result,) = await _judge(gateway, request, [job], 'batch', job.sub_id or '')
    return json_response(result)


@router.post('/judge/tests/batch', response_model=BatchJudgeTestsResult)
async def judge_tests_batch(batch: BatchJudgeTestsRequest, gateway: GatewayDep, request: Request) -> Response:
    """Many `/judge/tests` jobs at once (normal batch priority and deadline); results in job order."""
    too_big = _check_size(gateway, batch.jobs)
    if too_big is not None:
        return too_big
    results = await _judge(gateway, request, batch.jobs, 'batch', batch.sub_id or '')
    return json_response({'sub_id': batch.sub_id, 'results': results})


@router.post('/judge/tests/long-batch', response_model=BatchJudgeTestsResult)
async def judge_tests_long_batch(batch: BatchJudgeTestsRequest, gateway: GatewayDep, request: Request) -> Response:
    """Like `/judge/tests/batch` with the long deadline and the lowest priority."""
    too_big = _check_size(gateway, batch.jobs)
    if too_big is not None:
        return too_big
    results = await _judge(gateway, request, batch.jobs, 'long', batch.sub_id or '')
    return json_response({'sub_id': batch.sub_id, 'results': results})
