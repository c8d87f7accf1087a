"""What every compatible door shares: submitting through `api.submit.submit` with its door's name,
and refusals turned into values the door answers in its own API's shape.

A door translates a request into `judge.contracts.RunPayload`\\ s, submits them on its route's lane,
and translates the `judge.contracts.ResultDict`\\ s back; limits, verdicts and result building stay
the judge's.  `submit`'s back-pressure raises `HTTPException` (413, 429) before anything is
enqueued; a door gets it as a `Refused` and answers it its own way (SandboxFusion: 504, which verl
retries; Piston and Judge0: their error bodies).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

from fastapi import HTTPException, Request, Response

from api.deps import Gateway
from api.submit import submit
from api.table import SubmitRoute
from judge.contracts import FullResultDict, ResultDict, RunPayload, Verdict, new_id


@dataclass(frozen=True)
class Refused:
    """The gateway refused a door's request before enqueueing it (`api.backpressure.InFlight`)."""

    status: int
    detail: Any
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def message(self) -> str:
        """The refusal as one line of text."""
        if isinstance(self.detail, dict):
            return str(self.detail.get('error') or self.detail)
        return str(self.detail)


async def run(
    gateway: Gateway, request: Request, route: SubmitRoute, payloads: list[RunPayload], batch_id: str = ''
) -> list[ResultDict] | Refused:
    """Submit ``payloads`` on ``route``'s lane as its door; the results in order, or the refusal."""
    try:
        return await submit(gateway, request, payloads, route.lane, batch_id or new_id(), door=route.door)
    except HTTPException as exc:
        return Refused(exc.status_code, exc.detail, dict(exc.headers or {}))


def json_answer(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON answer of a door (its own shape, not re-validated)."""
    body = json.dumps(data, separators=(',', ':'), ensure_ascii=False)
    return Response(body, status_code=status, media_type='application/json', headers=headers)


def verdict_of(result: ResultDict) -> Verdict:
    """A result's verdict (`internal_error` when it has none)."""
    return Verdict(result.get('verdict') or Verdict.INTERNAL_ERROR.value)


def infra(result: ResultDict) -> bool:
    """The infrastructure could not judge it (`queue_timeout`, `internal_error`): never the program's fault."""
    return verdict_of(result) in (Verdict.QUEUE_TIMEOUT, Verdict.INTERNAL_ERROR)


def fetched(result: ResultDict) -> dict[str, str]:
    """The files a submission fetched (`judge.contracts.RunPayload.fetch`), path -> base64."""
    return dict(cast(FullResultDict, result).get('files') or {})


def usage(result: ResultDict) -> dict[str, Any]:
    """What the run used (`judge.contracts.UsageDict`), empty when it did not run."""
    return dict(cast(FullResultDict, result).get('usage') or {})
