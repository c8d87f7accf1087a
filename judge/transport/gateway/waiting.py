"""What a transport path does for one request: its jobs, and the `Path` / `Waiting` protocols.

`judge.transport.gateway.dispatch` drives a request through a `Path` (`judge.transport.gateway.fastpath` or
`judge.transport.gateway.stockpath`): it opens the request's `Waiting`, publishes its jobs (again, as a new
attempt, after a broker fault), takes the results, cancels, closes.
"""

from __future__ import annotations

from typing import Protocol

from judge.contracts import Job, ResultDict, RunPayload
from judge.transport.gateway.lanes import Lane

LIVE_TTL_S = 30
"""The live key's lifetime, renewed at every check while its request waits, so a finished request
leaves nothing to delete: its live key expires within this time."""


class Waiting(Protocol):
    """One request, as its path publishes and waits for it."""

    live_key: str
    """Exists while the request waits (`LIVE_TTL_S`, renewed); gone means Redis lost its data."""
    settle_s: float
    """How long a `take` may need to return results that are already stored."""

    async def publish(self, indices: list[int], expires_s: float) -> None:
        """Publish the jobs of ``indices`` as the request's next attempt and set its live key.

        Workers skip the copies of earlier attempts that have not started; a copy that is running
        still answers, and the first answer of each submission counts.
        """

    async def take(self, timeout_s: float, most: int) -> list[tuple[int, ResultDict]]:
        """``(index, result)`` pairs that arrived within ``timeout_s`` (at most about ``most``)."""

    async def cancel(self, remaining_s: float) -> None:
        """Ask the workers to skip the tasks that have not started (best effort, never raises)."""

    async def close(self, drained: bool) -> None:
        """Release what the request holds (``drained``: every result was taken)."""


class Path(Protocol):
    """How messages travel: publish a request's jobs, then wait for them."""

    name: str

    def open(self, payloads: list[RunPayload], batch: str, lane: Lane, request_id: str) -> Waiting:
        """The request's `Waiting`, with nothing published yet."""


def make_jobs(
    payloads: list[RunPayload], indices: list[int], reply_to: str | None, batch: str, wait_s: float
) -> list[Job]:
    """The `Job` of each payload of ``indices``, with its index in the request; ``wait_s``: how long the gateway
    still waits for them (a compile leaves the run its time within it: `judge.worker.runner.Runner.run`)."""
    return [{'sub': payloads[i], 'reply_to': reply_to, 'index': i, 'batch': batch, 'wait_s': wait_s} for i in indices]


def argsrepr(job: Job, attempt: int = 0) -> str:
    """What Flower shows as a task's arguments: the ids to grep for (and the attempt, after a broker fault)."""
    sub = job['sub']
    again = f', attempt={attempt}' if attempt else ''
    return f'(sub_id={sub.get("sub_id")!r}, type={sub.get("type")!r}, batch={job["batch"]!r}{again})'
