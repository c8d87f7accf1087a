"""Lanes carry their queue, priority and deadline; the submitting routes are one table (path, lane,
shape) that registers them and gives the back-pressure middleware their paths.  Each route hands the
router what the code of 383bec0 handed it, and answers the same (`tests/unit/api/pins/submit_routes.json`,
recorded through `api.main.app` with a fake router)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from fastapi import FastAPI

from api.backpressure import BodyLimit, InFlight
from api.deps import Gateway
from api.doors.judge0 import routes as judge0
from api.doors.piston import routes as piston
from api.doors.sandboxfusion import routes as sandboxfusion
from api.routes import judge_tests, upstream
from api.routes.table import Shape, submit_paths, submit_routes
from judge.contracts import RunPayload
from judge.results import internal_error
from judge.settings import Settings
from judge.transport import keys
from judge.transport.gateway.lanes import Lane, Lanes

PINS = json.loads((Path(__file__).parent / 'pins' / 'submit_routes.json').read_text())
SETTINGS = {
    'default': {},
    'custom': {'MAX_EXECUTION_TIME': '4', 'MAX_QUEUE_WORK_LIFE_TIME': '2', 'LONG_BATCH_MAX_QUEUE_WAIT_TIME': '50'},
    'short_long': {'LONG_BATCH_MAX_QUEUE_WAIT_TIME': '3'},
}
"""The environments the pins were recorded under."""
SUB = {'type': 'python', 'solution': 'print(1)', 'input': '', 'expected_output': '1'}
BATCH = {'sub_id': 'b', 'submissions': [SUB | {'sub_id': 'x1'}, SUB | {'sub_id': 'x2'}]}
JOB = {'sub_id': 't', 'type': 'python', 'solution': 'print(1)', 'tests': [{'input': '', 'expected_output': '1'}]}
BODIES: dict[str, dict[str, Any]] = {
    '/run': SUB | {'sub_id': 's'},
    '/judge': SUB | {'sub_id': 's'},
    '/run/batch': BATCH,
    '/run/long-batch': BATCH,
    '/judge/batch': BATCH,
    '/judge/long-batch': BATCH,
    '/judge/tests': JOB | {'tests': JOB['tests'] * 2},
    '/judge/tests/batch': {'sub_id': 'tb', 'jobs': [JOB]},
    '/judge/tests/long-batch': {'sub_id': 'tb', 'jobs': [JOB]},
}
OPERATIONS = [  # path, method, operation id, description, request model, response model: as at 383bec0
    ('/ping', 'get', 'ping_ping_get', 'Liveness: always `"pong"`.', '', 'string'),
    ('/run', 'post', 'run_run_post', 'Run one submission (highest priority).', 'Submission', 'SubmissionResult'),
    ('/judge', 'post', 'judge_judge_post', 'Judge one submission; like `/run` without the output streams.', 'Submission', 'JudgeResult'),  # noqa: E501
    ('/run/batch', 'post', 'run_batch_run_batch_post', 'Run a batch with the normal deadline; results in submission order.', 'BatchSubmission', 'BatchSubmissionResult'),  # noqa: E501
    ('/run/long-batch', 'post', 'run_long_batch_run_long_batch_post', 'Run a batch with the long deadline (lowest priority, never dropped for queue age).', 'BatchSubmission', 'BatchSubmissionResult'),  # noqa: E501
    ('/judge/batch', 'post', 'judge_batch_judge_batch_post', 'Judge a batch with the normal deadline.', 'BatchSubmission', 'BatchJudgeResult'),  # noqa: E501
    ('/judge/long-batch', 'post', 'judge_long_batch_judge_long_batch_post', 'Judge a batch with the long deadline.', 'BatchSubmission', 'BatchJudgeResult'),  # noqa: E501
    ('/status', 'get', 'status_status_get', 'Queue depth and live workers (upstream keys `queue`, `num_workers`, plus detail).', '', 'StatusResult'),  # noqa: E501
    ('/judge/tests', 'post', 'judge_tests_judge_tests_post', 'Judge one solution on many tests (normal batch priority and deadline).', 'JudgeTestsRequest', 'JudgeTestsResult'),  # noqa: E501
    ('/judge/tests/batch', 'post', 'judge_tests_batch_judge_tests_batch_post', 'Many `/judge/tests` jobs at once (normal batch priority and deadline); results in job order.', 'BatchJudgeTestsRequest', 'BatchJudgeTestsResult'),  # noqa: E501
    ('/judge/tests/long-batch', 'post', 'judge_tests_long_batch_judge_tests_long_batch_post', 'Like `/judge/tests/batch` with the long deadline and the lowest priority.', 'BatchJudgeTestsRequest', 'BatchJudgeTestsResult'),  # noqa: E501
]  # fmt: skip


class FakeRouter:
    """`judge.transport.gateway.router.Router.run` that records each call and answers `internal_error`."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def run(self, payloads: list[RunPayload], lane: Lane, batch: str, disconnected: Any = None) -> list[Any]:
        self.calls.append({'queue': lane.queue, 'priority': lane.priority, 'wait_s': lane.wait_s, 'n': len(payloads)})
        return [internal_error(p['sub_id'], 'fake', 0.5) | {'stdout': 'o', 'stderr': 'e'} for p in payloads]


def settings_of(name: str) -> Settings:
    with mock.patch.dict('os.environ', SETTINGS[name]):
        return Settings()


def gateway_app(settings: Settings, router: FakeRouter) -> FastAPI:
    """The gateway's routes as `api.main` registers them, for ``settings``, over ``router``."""
    table = submit_routes(Lanes.from_settings(settings))
    app = FastAPI()
    app.state.in_flight = InFlight(0, settings.max_batch_size, settings.retry_after_s)
    app.state.gateway = Gateway(settings=settings, celery=None, router=router, admission=None)  # type: ignore[arg-type]
    app.include_router(upstream.build_router(table))
    app.include_router(judge_tests.build_router(table))
    return app


async def post(app: FastAPI, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    """POST ``body`` to ``app`` over ASGI (no server, no lifespan): (status, JSON answer)."""
    raw = json.dumps(body).encode()
    scope = {
        'type': 'http',
        'asgi': {'version': '3.0'},
        'http_version': '1.1',
        'method': 'POST',
        'scheme': 'http',
        'path': path,
        'raw_path': path.encode(),
        'query_string': b'',
        'root_path': '',
        'headers': [(b'content-type', b'application/json'), (b'content-length', str(len(raw)).encode())],
        'client': ('127.0.0.1', 1),
        'server': ('127.0.0.1', 80),
        'app': app,
    }
    sent: list[dict[str, Any]] = []
    messages = [{'type': 'http.request', 'body': raw, 'more_body': False}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {'type': 'http.disconnect'}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    status = next(m['status'] for m in sent if m['type'] == 'http.response.start')
    return status, json.loads(b''.join(m.get('body', b'') for m in sent if m['type'] == 'http.response.body'))


@pytest.mark.parametrize('name', SETTINGS)
def test_each_route_hands_the_router_its_lane_and_answers_as_at_383bec0(name: str) -> None:
    router = FakeRouter()
    app = gateway_app(settings_of(name), router)
    got = {}
    for path, body in BODIES.items():
        status, answer = asyncio.run(post(app, path, body))
        (call,) = router.calls
        router.calls.clear()
        got[path] = {'status': status, 'call': call, 'answer': answer}
    assert got == PINS[name]


def test_the_lanes_of_the_default_settings() -> None:
    lanes = Lanes.from_settings(Settings())
    assert lanes == Lanes(
        single=Lane('single', 'judge.run', 1, 19.0),
        batch=Lane('batch', 'judge.batch', 4, 19.0),
        long=Lane('long', 'judge.long', 7, 3615.0),
        tests=Lane('tests', 'judge.batch', 4, 3615.0),
    )
    short = Lanes.from_settings(Settings(long_batch_max_queue_wait_time=3))
    assert (short.long.wait_s, short.tests.wait_s) == (3, 19), 'tests wait the longer of the two deadlines'
    assert not hasattr(keys, 'LANES') and not hasattr(keys, 'Lane')


def test_the_table_is_every_submitting_route_once_and_what_back_pressure_watches() -> None:
    from api.main import app, table

    native = [route for route in table if not route.door]  # the compatible doors' routes are additive
    assert len({route.path for route in table}) == len(table) and len(native) == 9
    posts = {path for path, methods in app.openapi()['paths'].items() if 'post' in methods}
    # Piston's install submits nothing; the session routes (api.routes.sessions) count a cell in flight themselves
    assert {p for p in posts - {route.path for route in table} if not p.startswith('/sessions')} == {'/api/v2/packages'}
    (body_limit,) = [m for m in app.user_middleware if m.cls is BodyLimit]
    assert body_limit.kwargs['submit_paths'] == submit_paths(table) == {route.path for route in native}
    assert {route.shape for route in table} == set(Shape)
    doors = set(sandboxfusion.ENDPOINTS) | set(piston.ENDPOINTS) | set(judge0.ENDPOINTS)
    assert set(upstream.ENDPOINTS) | set(judge_tests.ENDPOINTS) | doors == set(Shape)
    assert not set(upstream.ENDPOINTS) & set(judge_tests.ENDPOINTS)


def test_the_operations_are_those_of_383bec0() -> None:
    from api.main import app

    def model(schema: dict[str, Any]) -> str:
        return str(schema.get('$ref', '')).rsplit('/', 1)[-1] or str(schema.get('type', ''))

    got = []
    for path, methods in app.openapi()['paths'].items():
        for method, op in methods.items():
            body = op.get('requestBody', {}).get('content', {}).get('application/json', {}).get('schema', {})
            answer = op['responses']['200']['content']['application/json']['schema']
            got.append((path, method, op['operationId'], op['description'], model(body) if body else '', model(answer)))
    assert [op for op in got if op[0] in {o[0] for o in OPERATIONS}] == OPERATIONS  # new routes are additive
