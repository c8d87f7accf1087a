"""The submitting routes, written once: each one's path, lane and shape (what it takes and answers).

The gateway builds the table once at start-up, with its lanes (`api.main`); `api.routes.upstream`,
`api.routes.judge_tests` and the compatible doors (`api.doors`) register the routes from it (`add_route`),
and the back-pressure middleware knows the native ones by `submit_paths` (a door refuses with its
own API's answer, from `api.routes.submit.submit`).

The doors' lanes: SandboxFusion's ``/run_code`` and ``/run_jupyter`` and Piston's ``/api/v2/execute``
answer one waiting client per request (verl's reward and tools, open-r1's per-test requests), like
``/run``: the single lane.  Judge0's ``/submissions?wait=true`` likewise; its submissions without
``wait`` and its batches are fetched later by token, so nobody waits on the connection: the tests
lane (batch priority, the long deadline).
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Response

from api.doors.judge0.models import BatchAnswer, SubmissionAnswer
from api.doors.piston.models import ExecuteResponse
from api.doors.sandboxfusion.models import RunCodeResponse, RunJupyterResponse
from judge.contracts import (
    BatchJudgeResult,
    BatchJudgeTestsResult,
    BatchSubmissionResult,
    JudgeResult,
    JudgeTestsResult,
    SubmissionResult,
)
from judge.transport.gateway.lanes import Lane, Lanes

Endpoint = Callable[..., Awaitable[Response]]


class Shape(enum.Enum):
    """What a route takes and answers; the value is its response model."""

    RUN = SubmissionResult
    """One `Submission`; its result with the output streams."""
    JUDGE = JudgeResult
    """One `Submission`; its result without the output streams."""
    RUN_BATCH = BatchSubmissionResult
    """A `BatchSubmission`; its results with the output streams, in submission order."""
    JUDGE_BATCH = BatchJudgeResult
    """A `BatchSubmission`; its results without the output streams."""
    TESTS = JudgeTestsResult
    """One `JudgeTestsRequest`; its tests' verdicts and pass rate."""
    TESTS_BATCH = BatchJudgeTestsResult
    """A `BatchJudgeTestsRequest`; each job's answer, in job order."""
    SF_RUN_CODE = RunCodeResponse
    """SandboxFusion's ``RunCodeRequest``; its ``RunCodeResponse``."""
    SF_RUN_JUPYTER = RunJupyterResponse
    """SandboxFusion's ``RunJupyterRequest``; its ``RunJupyterResponse``."""
    PISTON_EXECUTE = ExecuteResponse
    """Piston's execute request; its stages."""
    JUDGE0_SUBMISSION = SubmissionAnswer
    """Judge0's submission; its fields (``wait=true``) or its token."""
    JUDGE0_BATCH = BatchAnswer
    """Judge0's batch of submissions; a token (or the errors) for each."""


@dataclass(frozen=True)
class SubmitRoute:
    """One submitting route (POST)."""

    path: str
    lane: Lane
    shape: Shape
    summary: str
    """What the route does (its OpenAPI description)."""
    door: str = ''
    """The compatible API the route belongs to (``sandboxfusion``, ``piston``, ``judge0``); empty: ours."""

    @property
    def name(self) -> str:
        """The endpoint's name (its OpenAPI operation id and title): the path's words, e.g. ``run_long_batch``."""
        return self.path.strip('/').replace('/', '_').replace('-', '_')


def submit_routes(lanes: Lanes) -> tuple[SubmitRoute, ...]:
    """Every submitting route with its lane, in the order they are registered (and listed in the OpenAPI schema)."""
    return (
        SubmitRoute('/run', lanes.single, Shape.RUN, 'Run one submission (highest priority).'),
        SubmitRoute(
            '/judge', lanes.single, Shape.JUDGE, 'Judge one submission; like `/run` without the output streams.'
        ),
        SubmitRoute(
            '/run/batch',
            lanes.batch,
            Shape.RUN_BATCH,
            'Run a batch with the normal deadline; results in submission order.',
        ),
        SubmitRoute(
            '/run/long-batch',
            lanes.long,
            Shape.RUN_BATCH,
            'Run a batch with the long deadline (lowest priority, never dropped for queue age).',
        ),
        SubmitRoute('/judge/batch', lanes.batch, Shape.JUDGE_BATCH, 'Judge a batch with the normal deadline.'),
        SubmitRoute('/judge/long-batch', lanes.long, Shape.JUDGE_BATCH, 'Judge a batch with the long deadline.'),
        SubmitRoute(
            '/judge/tests',
            lanes.tests,
            Shape.TESTS,
            'Judge one solution on many tests (normal batch priority and deadline).',
        ),
        SubmitRoute(
            '/judge/tests/batch',
            lanes.tests,
            Shape.TESTS_BATCH,
            'Many `/judge/tests` jobs at once (normal batch priority and deadline); results in job order.',
        ),
        SubmitRoute(
            '/judge/tests/long-batch',
            lanes.long,
            Shape.TESTS_BATCH,
            'Like `/judge/tests/batch` with the long deadline and the lowest priority.',
        ),
        *door_routes(lanes),
    )


def door_routes(lanes: Lanes) -> tuple[SubmitRoute, ...]:
    """The compatible doors' submitting routes (`api.doors`), with the lane each uses (module docstring)."""
    return (
        SubmitRoute(
            '/run_code',
            lanes.single,
            Shape.SF_RUN_CODE,
            "SandboxFusion's `/run_code`: run one program (docs/doors/sandboxfusion.md).",
            'sandboxfusion',
        ),
        SubmitRoute(
            '/run_jupyter',
            lanes.single,
            Shape.SF_RUN_JUPYTER,
            "SandboxFusion's `/run_jupyter`: run Python cells in order in one interpreter.",
            'sandboxfusion',
        ),
        SubmitRoute(
            '/api/v2/execute',
            lanes.single,
            Shape.PISTON_EXECUTE,
            "Piston v2's `/execute`: compile and run one job (docs/doors/piston.md).",
            'piston',
        ),
        SubmitRoute(
            '/submissions',
            lanes.single,
            Shape.JUDGE0_SUBMISSION,
            "Judge0 CE's `/submissions`: one submission, `wait=true` or fetched by token (docs/doors/judge0.md).",
            'judge0',
        ),
        SubmitRoute(
            '/submissions/batch',
            lanes.tests,
            Shape.JUDGE0_BATCH,
            "Judge0 CE's `/submissions/batch`: many submissions, fetched by token.",
            'judge0',
        ),
    )


def submit_paths(table: Iterable[SubmitRoute]) -> frozenset[str]:
    """The paths of ``table``'s native routes (the doors answer refusals in their own API's shape)."""
    return frozenset(route.path for route in table if not route.door)


_HAS_STRICT_CONTENT_TYPE = 'strict_content_type' in inspect.signature(APIRouter.add_api_route).parameters


def add_route(router: APIRouter, route: SubmitRoute, endpoint: Endpoint) -> None:
    """Register ``endpoint`` as ``route``: POST on its path, its response model, name and summary.

    A door's route also reads a JSON body sent without a ``Content-Type`` (pistonpy sends none; older
    FastAPI, which SandboxFusion runs on, read such bodies too): FastAPI 0.132 made that check
    (``strict_content_type``); before it every route read them."""
    response_model: Any = route.shape.value
    lenient = route.door and _HAS_STRICT_CONTENT_TYPE
    extra: dict[str, Any] = {'strict_content_type': False} if lenient else {}
    router.add_api_route(
        route.path,
        endpoint,
        methods=['POST'],
        response_model=response_model,
        name=route.name,
        description=route.summary,
        **extra,
    )
