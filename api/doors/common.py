"""What every compatible door shares: submitting through `api.routes.submit.submit` with its door's name,
and refusals turned into values the door answers in its own API's shape.

A door translates a request into `judge.contracts.RunPayload`\\ s, submits them on its route's lane,
and translates the `judge.contracts.ResultDict`\\ s back; limits, verdicts and result building stay
the judge's.  `submit`'s back-pressure raises `HTTPException` (413, 429) before anything is
enqueued; a door gets it as a `Refused` and answers it its own way (SandboxFusion: 504, which verl
retries; Piston and Judge0: their error bodies).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, cast

from fastapi import HTTPException, Request

from api.deps import Gateway
from api.doors.answer import json_answer as json_answer
from api.routes.submit import submit
from api.routes.table import SubmitRoute
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


Version = tuple[int, int, int]


def parse_version(text: str) -> Version:
    """The first ``X.Y.Z`` (or ``X.Y``) in ``text``, e.g. of ``g++ (Debian 12.2.0-14) 12.2.0``; 0.0.0 if none."""
    found = re.search(r'(\d+)\.(\d+)(?:\.(\d+))?', text)
    if not found:
        return (0, 0, 0)
    return (int(found.group(1)), int(found.group(2)), int(found.group(3) or 0))


class Toolchains:
    """The judge's toolchain versions by language, as the workers publish them (read at most every `refresh_s`)."""

    def __init__(self, refresh_s: float = 30.0) -> None:
        self.refresh_s = refresh_s
        self._versions: dict[str, Version] = {}
        self._read_at = -refresh_s

    async def refresh(self, gateway: Gateway) -> None:
        """Read the versions the workers published, unless read recently."""
        if time.monotonic() - self._read_at < self.refresh_s:
            return
        self._read_at = time.monotonic()
        versions: dict[str, Version] = {}
        for link in gateway.router.links:
            try:
                nodes = await link.shard.node_infos()
            except Exception:  # no broker: keep what is known
                continue
            for info in nodes.values():
                for language, text in dict(info.get('toolchains') or {}).items():
                    versions.setdefault(language, parse_version(str(text)))
        if versions:
            self._versions = versions

    def version(self, language: str) -> Version:
        """``language``'s version (0.0.0 before any worker reported)."""
        return self._versions.get(language, (0, 0, 0))


toolchains = Toolchains()
"""The gateway process's view of the toolchains (one per process)."""
