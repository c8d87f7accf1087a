"""Piston v2's door: ``POST /api/v2/execute``, ``GET /api/v2/runtimes``, ``GET``/``POST /api/v2/packages``.

open-r1's ``piston_client`` (``PISTON_ENDPOINTS=http://host:8088/api/v2``), ``pistonpy`` and other
Piston clients call these.  A plain job is one submission on the single lane (`api.routes.table.door_routes`):
the first UTF-8 file is the program, the other files go beside it, ``stdin`` (with a final newline
added, as Piston does), ``args``, ``run_timeout`` (ms) and ``run_memory_limit`` (bytes) lower the
judge's limits.  The answer has Piston's stages: ``compile`` for compiled languages (on a compile
error ``run`` repeats it, as Piston does), and ``run`` with ``stdout``, ``stderr``, ``output``,
``code``, ``signal``, ``message``, ``status`` (``RE``, ``SG``, ``TO``, ``OL``), ``memory`` (bytes),
``cpu_time`` and ``wall_time`` (ms).  A job in a Codeforces language follows open-r1's Codeforces
package (`api.doors.piston.codeforces`).

Errors: a request Piston would refuse gets its 400 ``{"message"}``; back-pressure 429 (with
``Retry-After``); a job the infrastructure could not run, or that was still queued at the lane's
deadline, 503 ``{"message"}`` (open-r1's client retries any non-200): never a wrong answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request, Response

from api.deps import GatewayDep
from api.doors.common import json_answer, toolchains, verdict_of
from api.doors.piston.codeforces import Job as CodeforcesJob
from api.doors.piston.ioi import Job as IoiJob
from api.doors.piston.models import ExecuteRequest, PackageRequest
from api.doors.piston.runtimes import CMS_IOI, PACKAGES, PLAIN, Runtime, Runtimes
from api.doors.piston.stages import BadRequest, bad_request, compile_stage, job_files, limits, run_one, run_stage
from api.doors.semver import show
from api.routes.table import Endpoint, Shape, SubmitRoute, add_route
from judge import workfiles
from judge.contracts import ResultDict, RunPayload, Verdict, new_id

DOOR = 'piston'
PREFIX = '/api/v2'
runtimes = Runtimes()


def plain_payload(body: ExecuteRequest, runtime: Runtime) -> RunPayload:
    """The submission of a plain job."""
    program, files = job_files(body)
    stdin = body.stdin if body.stdin.endswith('\n') else body.stdin + '\n'
    payload: RunPayload = {
        'sub_id': new_id(),
        'type': runtime.judge,
        'solution': program,
        'input': stdin,
        'expected_output': None,
        'full': True,
    }
    if files:
        payload['files'] = {name: workfiles.encode(data) for name, data in files.items()}
    if body.args:
        payload['args'] = list(body.args)
    return limits(payload, body)


def answer(runtime: Runtime, version: str, result: ResultDict) -> dict[str, Any]:
    """Piston's answer to a plain job."""
    out: dict[str, Any] = {'language': runtime.language, 'version': version, 'run': run_stage(result)}
    if runtime.compiled:
        out['compile'] = compile_stage(result)
        if verdict_of(result) is Verdict.COMPILE_ERROR:
            out['run'] = out['compile']  # Piston: the run stage repeats the compile stage it never reached
    return out


def _execute(route: SubmitRoute) -> Endpoint:
    async def endpoint(body: ExecuteRequest, gateway: GatewayDep, request: Request) -> Response:
        await toolchains.refresh(gateway)
        try:
            runtime = runtimes.resolve(body.language, body.version)
        except ValueError as exc:
            return bad_request(str(exc))
        if runtime is None:
            return bad_request(f'{body.language}-{body.version} runtime is unknown')
        version = show(runtimes.version(runtime))
        try:
            if runtime.package == CMS_IOI:
                ioi = IoiJob.of(body, runtime)
                return await ioi.judge(gateway, request, route, version)
            if runtime.package:
                job = CodeforcesJob.of(body, runtime)
                return await job.judge(gateway, request, route, version)
            payload = plain_payload(body, runtime)
        except BadRequest as exc:
            return bad_request(str(exc))
        result = await run_one(gateway, request, route, payload)
        if isinstance(result, Response):
            return result
        return json_answer(answer(runtime, version, result))

    return endpoint


async def list_runtimes(gateway: GatewayDep) -> Response:
    """Piston's ``GET /api/v2/runtimes``: every language, its version and aliases."""
    await toolchains.refresh(gateway)
    return json_answer(runtimes.listing())


async def list_packages(gateway: GatewayDep) -> Response:
    """Piston's ``GET /api/v2/packages``: everything is built in, so everything is installed."""
    await toolchains.refresh(gateway)
    plain = [
        {'language': rt.runtime or rt.language, 'language_version': show(runtimes.version(rt)), 'installed': True}
        for rt in PLAIN
    ]
    unique = {(p['language'], p['language_version']): p for p in plain}
    packaged = [{'language': name, 'language_version': show(v), 'installed': True} for name, v in PACKAGES.items()]
    return json_answer([*unique.values(), *packaged])


async def install_package(body: PackageRequest, gateway: GatewayDep) -> Response:
    """Piston's ``POST /api/v2/packages``: a built-in package is already there (open-r1's set-up installs one)."""
    await toolchains.refresh(gateway)
    for name, version in PACKAGES.items():
        if body.language == name and body.version in (show(version), '*'):
            return json_answer({'language': name, 'version': show(version)})
    for rt in PLAIN:
        if body.language in (rt.language, rt.runtime) and body.version in (show(runtimes.version(rt)), '*'):
            return json_answer({'language': body.language, 'version': show(runtimes.version(rt))})
    return json_answer({'message': f'Requested package {body.language}-{body.version} does not exist'}, 404)


ENDPOINTS: dict[Shape, Callable[[SubmitRoute], Endpoint]] = {Shape.PISTON_EXECUTE: _execute}
"""The shapes this door answers, and how."""


def build_router(table: tuple[SubmitRoute, ...]) -> APIRouter:
    """``table``'s Piston routes, its runtimes and its packages."""
    router = APIRouter(tags=['Piston'])
    for route in table:
        if route.shape in ENDPOINTS:
            add_route(router, route, ENDPOINTS[route.shape](route))
    router.add_api_route(f'{PREFIX}/runtimes', list_runtimes, methods=['GET'])
    router.add_api_route(f'{PREFIX}/packages', list_packages, methods=['GET'])
    router.add_api_route(f'{PREFIX}/packages', install_package, methods=['POST'])
    return router
