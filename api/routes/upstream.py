"""Upstream-compatible routes: `/run*`, `/judge*`, `/status`, `/ping`.

The submitting ones come from the route table (`api.routes.table`): one endpoint per shape, bound to its
route's lane.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from fastapi import APIRouter, Request, Response

from api.deps import GatewayDep
from api.routes.status import collect_status
from api.routes.submit import json_response, submit
from api.routes.table import Endpoint, Shape, SubmitRoute, add_route
from judge.contracts import BatchSubmission, ResultDict, StatusResult, Submission
from judge.results import judge_view


async def ping() -> str:
    """Liveness: always `"pong"`."""
    return 'pong'


async def status(gateway: GatewayDep) -> dict[str, Any]:
    """Queue depth and live workers (upstream keys `queue`, `num_workers`, plus detail)."""
    return await collect_status(gateway)


def _whole(result: ResultDict) -> Any:
    return result


def _one(route: SubmitRoute, view: Callable[[ResultDict], Any]) -> Endpoint:
    """The endpoint of a single-submission route: ``view`` of its result."""

    async def endpoint(sub: Submission, gateway: GatewayDep, request: Request) -> Response:
        (result,) = await submit(gateway, request, [sub.payload()], route.lane, sub.sub_id or '')
        return json_response(view(result))

    return endpoint


def _batch(route: SubmitRoute, view: Callable[[ResultDict], Any]) -> Endpoint:
    """The endpoint of a batch route: ``view`` of each result, in submission order."""

    async def endpoint(batch: BatchSubmission, gateway: GatewayDep, request: Request) -> Response:
        payloads = [s.payload() for s in batch.submissions]
        results = await submit(gateway, request, payloads, route.lane, batch.sub_id or '')
        return json_response({'sub_id': batch.sub_id, 'results': [view(r) for r in results]})

    return endpoint


ENDPOINTS: dict[Shape, Callable[[SubmitRoute], Endpoint]] = {
    Shape.RUN: lambda route: _one(route, _whole),
    Shape.JUDGE: lambda route: _one(route, judge_view),
    Shape.RUN_BATCH: lambda route: _batch(route, _whole),
    Shape.JUDGE_BATCH: lambda route: _batch(route, judge_view),
}
"""The shapes this module answers, and how."""


def build_router(table: Iterable[SubmitRoute]) -> APIRouter:
    """`/ping`, ``table``'s routes of the shapes in `ENDPOINTS`, `/status`."""
    router = APIRouter()
    router.add_api_route('/ping', ping, methods=['GET'])
    for route in table:
        if route.shape in ENDPOINTS:
            add_route(router, route, ENDPOINTS[route.shape](route))
    router.add_api_route('/status', status, methods=['GET'], response_model=StatusResult)
    return router
