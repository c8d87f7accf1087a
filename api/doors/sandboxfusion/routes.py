"""SandboxFusion's door: ``POST /run_code``, ``POST /run_jupyter`` and ``GET /v1/ping``.

verl's reward (``verl.utils.reward_score.sandbox_fusion``), its ``SandboxFusionTool``, the
``sandbox-fusion`` SDK, tinker-cookbook and ROLL call these.  A request becomes one submission on the
route's lane (`api.routes.table.door_routes`); its result becomes SandboxFusion's answer:

* ``status``: ``Success`` when the program ran to a zero exit within its limits; ``Failed`` for a
  compile error, a non-zero exit, a time, memory or output limit; ``SandboxError`` (with
  ``message``) when the infrastructure could not run it: never ``Failed``.
* a submission still queued at the lane's deadline, or a request refused for back-pressure, answers
  HTTP 504: the one status verl's client retries.
* ``compile_result`` (compiled languages) and ``run_result``: ``status`` (``Finished`` or
  ``TimeLimitExceeded``), ``execution_time`` (seconds), ``return_code``, ``stdout``, ``stderr``, the
  streams whole up to the node's output limit.

``run_timeout`` and ``memory_limit_MB`` lower the node's limits, never raise them; compiles run under
the node's compile limit and are cached per node (``compile_timeout`` is accepted and not applied).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request, Response

from api.deps import GatewayDep
from api.doors.common import Refused, fetched, infra, json_answer, run, verdict_of
from api.doors.sandboxfusion.jupyter import driver, parse_report
from api.doors.sandboxfusion.models import (
    SF_LANGUAGES,
    CommandRunStatus,
    RunCodeRequest,
    RunJupyterRequest,
    RunStatus,
)
from api.routes.table import Endpoint, Shape, SubmitRoute, add_route
from judge.contracts import ResultDict, RunPayload, Verdict, new_id

DOOR = 'sandboxfusion'


async def ping() -> str:
    """SandboxFusion's health check: always ``"pong"``."""
    return 'pong'


def _limits(payload: RunPayload, time_s: float, memory_mb: int) -> RunPayload:
    if time_s > 0:
        payload['time_limit_s'] = time_s
    if memory_mb > 0:
        payload['memory_mb'] = memory_mb
    return payload


def code_payload(body: RunCodeRequest) -> RunPayload:
    """The submission of a ``/run_code`` request."""
    return _payload(body, SF_LANGUAGES[body.language], body.code, body.stdin, body.run_timeout)


def _payload(
    body: RunCodeRequest | RunJupyterRequest, language: str, source: str, stdin: str | None, time_s: float
) -> RunPayload:
    """One submission running ``source``, with the request's files, fetched files and limits."""
    payload: RunPayload = {
        'sub_id': new_id(),
        'type': language,
        'solution': source,
        'input': stdin,
        'expected_output': None,
        'full': True,
    }
    if body.files:
        payload['files'] = body.work_files()
    if body.fetch_files:
        payload['fetch'] = list(body.fetch_files)
    return _limits(payload, time_s, body.memory_limit_MB)


def _base() -> dict[str, Any]:
    return {'status': RunStatus.SUCCESS.value, 'message': '', 'executor_pod_name': None, 'files': {}}


def _sandbox_error(result: ResultDict) -> dict[str, Any]:
    error = result.get('error') or result.get('reason') or 'the judge could not run the program'
    return _base() | {'status': RunStatus.SANDBOX_ERROR.value, 'message': str(error)}


def _run_step(result: ResultDict, verdict: Verdict) -> dict[str, Any]:
    timed_out = verdict is Verdict.TIME_LIMIT
    code = result.get('exit_code')
    if not timed_out and verdict is not Verdict.ACCEPTED and not code:
        code = 1  # killed for memory or output with no exit status: SandboxFusion's clients read a non-zero code
    return {
        'status': (CommandRunStatus.TIME_LIMIT_EXCEEDED if timed_out else CommandRunStatus.FINISHED).value,
        'execution_time': result.get('cost'),
        'return_code': None if timed_out else code,
        'stdout': result.get('stdout') or '',
        'stderr': result.get('stderr') or '',
    }


def run_code_answer(result: ResultDict) -> dict[str, Any]:
    """SandboxFusion's ``RunCodeResponse`` for a result (not for ``queue_timeout``: that is a 504)."""
    verdict = verdict_of(result)
    if infra(result):
        return _sandbox_error(result) | {'compile_result': None, 'run_result': None}
    answer = _base()
    compiled = result.get('compile')
    if compiled is not None:
        answer['compile_result'] = {
            'status': CommandRunStatus.FINISHED.value,
            'execution_time': compiled['cost'],
            'return_code': 0 if compiled['ok'] else 1,
            'stdout': '',
            'stderr': compiled['stderr'],
        }
    else:
        answer['compile_result'] = None
    answer['run_result'] = None if verdict is Verdict.COMPILE_ERROR else _run_step(result, verdict)
    answer['files'] = fetched(result)
    if verdict is not Verdict.ACCEPTED:
        answer['status'] = RunStatus.FAILED.value
    return answer


def _gateway_timeout(message: str, headers: dict[str, str] | None = None) -> Response:
    return json_answer({'detail': message}, 504, headers)


async def _answered(
    gateway: GatewayDep, request: Request, route: SubmitRoute, payload: RunPayload
) -> ResultDict | Response:
    """The submission's result, or the 504 of a refused or timed-out request (verl retries it)."""
    outcome = await run(gateway, request, route, [payload])
    if isinstance(outcome, Refused):
        return _gateway_timeout(f'the judge is busy: {outcome.message}', outcome.headers)
    if verdict_of(outcome[0]) is Verdict.QUEUE_TIMEOUT:
        return _gateway_timeout('the judge did not run the program before its deadline; retry')
    return outcome[0]


def _run_code(route: SubmitRoute) -> Endpoint:
    async def endpoint(body: RunCodeRequest, gateway: GatewayDep, request: Request) -> Response:
        result = await _answered(gateway, request, route, code_payload(body))
        return result if isinstance(result, Response) else json_answer(run_code_answer(result))

    return endpoint


def jupyter_answer(result: ResultDict, marker: str, n: int) -> dict[str, Any]:
    """SandboxFusion's ``RunJupyterResponse`` for the driver's result."""
    if infra(result):
        return _sandbox_error(result) | {'driver': None, 'cells': []}
    verdict = verdict_of(result)
    step = _run_step(result, verdict)
    cells = parse_report(result.get('stdout') or '', marker, n) if verdict is Verdict.ACCEPTED else None
    answer = _base() | {'driver': step, 'cells': cells or [], 'files': fetched(result)}
    if cells is None:
        answer['status'] = RunStatus.FAILED.value
    return answer


def _run_jupyter(route: SubmitRoute) -> Endpoint:
    async def endpoint(body: RunJupyterRequest, gateway: GatewayDep, request: Request) -> Response:
        source, marker = driver(body.cells, body.cell_timeout)
        payload = _payload(body, 'python', source, None, body.total_timeout)
        result = await _answered(gateway, request, route, payload)
        return result if isinstance(result, Response) else json_answer(jupyter_answer(result, marker, len(body.cells)))

    return endpoint


ENDPOINTS: dict[Shape, Callable[[SubmitRoute], Endpoint]] = {
    Shape.SF_RUN_CODE: _run_code,
    Shape.SF_RUN_JUPYTER: _run_jupyter,
}
"""The shapes this door answers, and how."""


def build_router(table: tuple[SubmitRoute, ...]) -> APIRouter:
    """``table``'s SandboxFusion routes and its health check."""
    router = APIRouter(tags=['SandboxFusion'])
    for route in table:
        if route.shape in ENDPOINTS:
            add_route(router, route, ENDPOINTS[route.shape](route))
    router.add_api_route('/v1/ping', ping, methods=['GET'])
    return router
