"""`POST /judge/tests`: one solution, many tests, one answer with per-test verdicts and a pass rate.

Each test is one submission (one payload per test, carrying the checker name) sent through the same
`api.routes.submit.submit` as every other route, so a job's tests run in parallel on every free slot and
the request gets the same back-pressure, metrics and access log.  The solution is compiled once per
node: the first task to reach a node compiles into the node's content-addressed cache under an
``flock`` and the others wait for it, then hit.  A compile error therefore fails every test with
``compile_error``.

Deadlines: `/judge/tests` and `/judge/tests/batch` queue with the batch priority but wait up to the
long-batch deadline (a job of many tests cannot finish in one submission's deadline: their lane is
`judge.transport.gateway.lanes.Lanes.tests`); `/judge/tests/long-batch` uses the long-batch lane.

``stop_on_first_failure`` cuts the *reported* list after the first failing test; every test is
still judged (they run in parallel, so cancelling would save little), and ``passed``/``pass_rate``
count them all (`judge.results.fold_tests`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from fastapi import APIRouter, Request, Response

from api.deps import GatewayDep
from api.routes.submit import json_response, submit
from api.routes.table import Endpoint, Shape, SubmitRoute, add_route
from judge.contracts import (
    BatchJudgeTestsRequest,
    JudgeTestsRequest,
    RunPayload,
)
from judge.results import fold_tests
from judge.transport.gateway.lanes import Lane


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


def _one(route: SubmitRoute) -> Endpoint:
    """The endpoint of `Shape.TESTS`: one job, its answer."""

    async def endpoint(job: JudgeTestsRequest, gateway: GatewayDep, request: Request) -> Response:
        (result,) = await _judge(gateway, request, [job], route.lane, job.sub_id or '')
        return json_response(result)

    return endpoint


def _batch(route: SubmitRoute) -> Endpoint:
    """The endpoint of `Shape.TESTS_BATCH`: many jobs, their answers in job order."""

    async def endpoint(batch: BatchJudgeTestsRequest, gateway: GatewayDep, request: Request) -> Response:
        results = await _judge(gateway, request, batch.jobs, route.lane, batch.sub_id or '')
        return json_response({'sub_id': batch.sub_id, 'results': results})

    return endpoint


ENDPOINTS: dict[Shape, Callable[[SubmitRoute], Endpoint]] = {Shape.TESTS: _one, Shape.TESTS_BATCH: _batch}
"""The shapes this module answers, and how."""


def build_router(table: Iterable[SubmitRoute]) -> APIRouter:
    """``table``'s routes of the shapes in `ENDPOINTS`."""
    router = APIRouter()
    for route in table:
        if route.shape in ENDPOINTS:
            add_route(router, route, ENDPOINTS[route.shape](route))
    return router
