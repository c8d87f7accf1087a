"""`POST /judge/tests`: one solution, many tests, one answer with per-test verdicts and a pass rate.

Each test is one submission (one payload per test, carrying the checker name) sent through the same
`api.submit.submit` as every other route, so a job's tests run in parallel on every free slot and
the request gets the same back-pressure, metrics and access log.  The solution is compiled once per
node: the first task to reach a node compiles into the node's content-addressed cache under an
``flock`` and the others wait for it, then hit.  A compile error therefore fails every test with
``compile_error``.

Deadlines: `/judge/tests` and `/judge/tests/batch` queue with the batch priority but wait up to the
long-batch deadline (a job of many tests cannot finish in one submission's deadline: their lane is
`judge.transport.lanes.Lanes.tests`); `/judge/tests/long-batch` uses the long-batch lane.

``stop_on_first_failure`` cuts the *reported* list after the first failing test; every test is
still judged (they run in parallel, so cancelling would save little), and ``passed``/``pass_rate``
count them all (`judge.results.fold_tests`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from api.deps import GatewayDep
from api.submit import json_response, submit
from judge.contracts import (
    BatchJudgeTestsRequest,
    BatchJudgeTestsResult,
    JudgeTestsRequest,
    JudgeTestsResult,
    RunPayload,
)
from judge.results import fold_tests
from judge.transport.lanes import Lane

router = APIRouter()


def payloads_for(job: JudgeTestsRequest) -> list[RunPayload]:
    """One worker payload per test; each carries the checker name (`judge.worker.runner.Runner.run`)."""
    payloads: list[RunPayload] = [
        {
            'sub_id': f'{job.sub_id}:{i}',
            'type': job.type,
            'solution': job.solution,
            'input': test.input,
            'expected_output': test.expected_output,
            'checker': job.checker,
        }
        for i, test in enumerate(job.tests)
    ]
    if job.seed is not None:
        for payload in payloads:
            payload['seed'] = job.seed
    return payloads


async def _judge(
    gateway: GatewayDep, request: Request, jobs: list[JudgeTestsRequest], lane: Lane, batch_id: str
) -> list[dict[str, Any]]:
    """Run every test of every job as one request on ``lane``; fold each job's results."""
    payloads: list[RunPayload] = []
    spans: list[tuple[int, int]] = []
    for job in jobs:
        start = len(payloads)
        payloads.extend(payloads_for(job))
        spans.append((start, len(payloads)))
    results = await submit(gateway, request, payloads, lane, batch_id)
    return [fold_tests(job, results[a:b]) for job, (a, b) in zip(jobs, spans, strict=True)]


@router.post('/judge/tests', response_model=JudgeTestsResult)
async def judge_tests(job: JudgeTestsRequest, gateway: GatewayDep, request: Request) -> Response:
    """Judge one solution on many tests (normal batch priority and deadline)."""
    (result,) = await _judge(gateway, request, [job], gateway.lanes.tests, job.sub_id or '')
    return json_response(result)


@router.post('/judge/tests/batch', response_model=BatchJudgeTestsResult)
async def judge_tests_batch(batch: BatchJudgeTestsRequest, gateway: GatewayDep, request: Request) -> Response:
    """Many `/judge/tests` jobs at once (normal batch priority and deadline); results in job order."""
    results = await _judge(gateway, request, batch.jobs, gateway.lanes.tests, batch.sub_id or '')
    return json_response({'sub_id': batch.sub_id, 'results': results})


@router.post('/judge/tests/long-batch', response_model=BatchJudgeTestsResult)
async def judge_tests_long_batch(batch: BatchJudgeTestsRequest, gateway: GatewayDep, request: Request) -> Response:
    """Like `/judge/tests/batch` with the long deadline and the lowest priority."""
    results = await _judge(gateway, request, batch.jobs, gateway.lanes.long, batch.sub_id or '')
    return json_response({'sub_id': batch.sub_id, 'results': results})
