"""Judge0 CE's door: ``POST /submissions`` (``wait``, ``base64_encoded``, ``fields``),
``GET /submissions/{token}``, ``POST``/``GET /submissions/batch``, ``GET /languages``,
``/languages/{id}``, ``/statuses``, ``/about``, ``/config_info``.

The official ``judge0`` SDK and agent tools call these.  A submission is one judge submission: with
``wait=true`` on the single lane, answered when judged; without, admitted at once (503 ``queue is
full`` when the judge is full), answered ``{"token"}``, and run in the background
(`api.routes.submit.submit_later`).  A batch runs as one request on the tests lane (batch priority, the long
deadline).  Every submission is kept in Redis under its token for ``JUDGE_DOOR_RESULT_TTL_S``
(`judge.transport.gateway.records`), so ``GET`` finds it from any gateway process; statuses and fields:
`api.doors.judge0.render`.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response
from pydantic import ValidationError

from api.deps import Gateway, GatewayDep
from api.doors.common import Refused, json_answer, run, toolchains
from api.doors.judge0.info import about, config_info, language, languages, max_batch, statuses
from api.doors.judge0.models import BatchRequest, Refusal, SubmissionRequest, error
from api.doors.judge0.models import refusal as refuse
from api.doors.judge0.render import name_of, now, outcome, parse_fields, render
from api.routes.submit import submit_later
from api.routes.table import Endpoint, Shape, SubmitRoute, add_route
from judge.contracts import ResultDict, RunPayload
from judge.transport.gateway.records import Records

DOOR = 'judge0'
logger = logging.getLogger('api.doors.judge0')


_stores: dict[int, Records] = {}


def _records(gateway: Gateway) -> Records:
    """This gateway's record store (one per process, so that writes of the moment go together)."""
    found = _stores.get(id(gateway))
    if found is None:
        found = _stores[id(gateway)] = Records(gateway.router.links[0].shard, gateway.settings.door_result_ttl_s)
    return found


def prepare(body: SubmissionRequest, base64_encoded: bool, gateway: Gateway) -> tuple[RunPayload, dict[str, Any]]:
    """The judge payload and the stored record of one submission; `Refusal` as Judge0 refuses it."""
    language = body.checked()
    source = body.decoded('source_code', base64_encoded) or ''
    stdin = body.decoded('stdin', base64_encoded)
    expected = body.decoded('expected_output', base64_encoded)
    token = str(uuid.uuid4())
    payload: RunPayload = {
        'sub_id': token,
        'type': language.judge,
        'solution': source,
        'input': stdin,
        'expected_output': expected,
        'full': True,
    }
    if expected is not None:
        payload['checker'] = 'lines'
    if args := body.arguments():
        payload['args'] = args
    if files := body.files():
        payload['files'] = files
    limits = [t for t in (body.wall_time_limit, body.cpu_time_limit) if t]
    if body.cpu_time_limit and body.cpu_extra_time:
        limits[-1] += body.cpu_extra_time
    if limits:
        payload['time_limit_s'] = min(limits)
    if body.memory_limit:
        payload['memory_mb'] = max(1, math.ceil(body.memory_limit / 1024))
    settings = gateway.settings
    record: dict[str, Any] = {
        'token': token,
        'language_id': language.id,
        'source_code': source,
        'stdin': stdin,
        'expected_output': expected,
        'status_id': 1,
        'created_at': now(),
        'finished_at': None,
        'number_of_runs': body.number_of_runs or 1,
        'cpu_time_limit': body.cpu_time_limit or settings.max_execution_time,
        'cpu_extra_time': body.cpu_extra_time or 0.0,
        'wall_time_limit': body.wall_time_limit or settings.max_execution_time,
        'memory_limit': body.memory_limit or settings.max_memory * 1024,
        'stack_limit': body.stack_limit or 64000,
        'max_processes_and_or_threads': body.max_processes_and_or_threads or settings.pids_limit,
        'enable_per_process_and_thread_time_limit': bool(body.enable_per_process_and_thread_time_limit),
        'enable_per_process_and_thread_memory_limit': bool(body.enable_per_process_and_thread_memory_limit),
        'max_file_size': body.max_file_size or settings.file_size_limit_mb * 1024,
        'compiler_options': None,
        'command_line_arguments': body.command_line_arguments,
        'redirect_stderr_to_stdout': bool(body.redirect_stderr_to_stdout),
        'callback_url': None,
        'additional_files': body.additional_files,
        'enable_network': False,
        'deadline': None,
    }
    return payload, record


def too_many(settings: Any) -> Response:
    """Judge0's refusal of a batch over the limit."""
    return error(f'number of submissions in a batch should be less than or equal to {max_batch(settings)}')


def _flags(request: Request) -> tuple[bool, tuple[str, ...] | str]:
    query = request.query_params
    return query.get('base64_encoded') == 'true', parse_fields(query.get('fields'))


def _finish(record: dict[str, Any], result: ResultDict) -> dict[str, Any]:
    return record | outcome(result, bool(record['redirect_stderr_to_stdout']))


def _create(route: SubmitRoute) -> Endpoint:
    async def endpoint(body: SubmissionRequest, gateway: GatewayDep, request: Request) -> Response:
        b64, fields = _flags(request)
        if isinstance(fields, str):
            return error(fields)
        await toolchains.refresh(gateway)
        try:
            payload, record = prepare(body, b64, gateway)
        except Refusal as exc:
            return refuse(exc.field, exc.problem)
        records = _records(gateway)
        record['deadline'] = time.time() + route.lane.wait_s
        if request.query_params.get('wait') == 'true':
            results = await run(gateway, request, route, [payload], record['token'])
            if isinstance(results, Refused):
                return error('queue is full', 503)
            record = _finish(record, results[0])
            records.keep(record['token'], record)
            return json_answer(render(record, fields, b64, name_of(record['language_id'])), 201)
        try:
            await records.put(record['token'], record)
        except Exception as exc:
            return error(f'the judge cannot keep submissions now ({type(exc).__name__}); retry', 503)

        async def done(results: list[ResultDict]) -> None:
            await records.put(record['token'], _finish(record, results[0]))

        if await _later(gateway, request, route, [payload], record['token'], done) is not None:
            return error('queue is full', 503)
        return json_answer({'token': record['token']}, 201)

    return endpoint


async def _later(
    gateway: Gateway,
    request: Request,
    route: SubmitRoute,
    payloads: list[RunPayload],
    batch_id: str,
    done: Callable[[list[ResultDict]], Any],
) -> Refused | None:
    try:
        await submit_later(gateway, request, payloads, route.lane, batch_id, route.door, done)
    except HTTPException as exc:
        return Refused(exc.status_code, exc.detail, dict(exc.headers or {}))
    return None


def _create_batch(route: SubmitRoute) -> Endpoint:
    async def endpoint(body: BatchRequest, gateway: GatewayDep, request: Request) -> Response:
        b64 = request.query_params.get('base64_encoded') == 'true'
        if not body.submissions:
            return error('there should be at least one submission in a batch')
        if len(body.submissions) > max_batch(gateway.settings):
            return error(
                f'number of submissions in a batch should be less than or equal to {max_batch(gateway.settings)}'
            )
        await toolchains.refresh(gateway)
        answers: list[dict[str, Any]] = []
        prepared: list[tuple[RunPayload, dict[str, Any]]] = []
        for raw in body.submissions:
            try:
                payload, record = prepare(SubmissionRequest.model_validate(raw), b64, gateway)
            except ValidationError as exc:
                answers.append({'.'.join(map(str, e['loc'])): [e['msg']] for e in exc.errors()})
                continue
            except Refusal as exc:
                answers.append({exc.field: [exc.problem]})
                continue
            record['deadline'] = time.time() + route.lane.wait_s
            prepared.append((payload, record))
            answers.append({'token': record['token']})
        if not prepared:
            return json_answer(answers, 422)
        records = _records(gateway)
        try:
            await records.put_many({record['token']: record for _, record in prepared})
        except Exception as exc:
            return error(f'the judge cannot keep submissions now ({type(exc).__name__}); retry', 503)

        async def done(results: list[ResultDict]) -> None:
            finished = [_finish(record, result) for (_, record), result in zip(prepared, results, strict=True)]
            await records.put_many({record['token']: record for record in finished})

        batch_id = prepared[0][1]['token']
        if await _later(gateway, request, route, [p for p, _ in prepared], batch_id, done) is not None:
            return error('queue is full', 503)
        return json_answer(answers, 201)

    return endpoint


async def show_batch(request: Request, gateway: GatewayDep) -> Response:
    """``GET /submissions/batch?tokens=a,b``: each submission, or null for an unknown token."""
    b64, fields = _flags(request)
    if isinstance(fields, str):
        return error(fields)
    raw = request.headers.get('tokens') or request.query_params.get('tokens') or ''
    tokens = [t for t in raw.strip().split(',') if t]
    if not tokens:
        return error('there should be at least one submission in a batch')
    if len(tokens) > max_batch(gateway.settings):
        return too_many(gateway.settings)
    await toolchains.refresh(gateway)
    found = await _records(gateway).get(tokens)
    shown = [None if r is None else render(r, fields, b64, name_of(r['language_id'])) for r in found]
    return json_answer({'submissions': shown})


async def show_one(token: str, request: Request, gateway: GatewayDep) -> Response:
    """``GET /submissions/{token}``."""
    b64, fields = _flags(request)
    if isinstance(fields, str):
        return error(fields)
    await toolchains.refresh(gateway)
    (record,) = await _records(gateway).get([token])
    if record is None:
        return error('not found', 404)
    return json_answer(render(record, fields, b64, name_of(record['language_id'])))


ENDPOINTS: dict[Shape, Callable[[SubmitRoute], Endpoint]] = {
    Shape.JUDGE0_SUBMISSION: _create,
    Shape.JUDGE0_BATCH: _create_batch,
}
"""The shapes this door answers, and how."""


def build_router(table: tuple[SubmitRoute, ...]) -> APIRouter:
    """``table``'s Judge0 routes and its reading routes (the batch one before ``/{token}``)."""
    router = APIRouter(tags=['Judge0'])
    for route in table:
        if route.shape in ENDPOINTS:
            add_route(router, route, ENDPOINTS[route.shape](route))
    router.add_api_route('/submissions/batch', show_batch, methods=['GET'])
    router.add_api_route('/submissions/{token}', show_one, methods=['GET'])
    router.add_api_route('/languages', languages, methods=['GET'])
    router.add_api_route('/languages/{language_id}', language, methods=['GET'])
    router.add_api_route('/statuses', statuses, methods=['GET'])
    router.add_api_route('/about', about, methods=['GET'])
    router.add_api_route('/config_info', config_info, methods=['GET'])
    return router
