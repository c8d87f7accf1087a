"""Send a request's submissions to the workers and wait for their results, without blocking the loop.

Each request publishes its submissions as one Celery group (a shared ``group_id``, one task per
submission) and waits until every one has answered or its deadline passes.  Unanswered submissions
become ``queue_timeout`` and their tasks expire at the deadline, so nobody runs them for a client
that has gone.  How the messages travel is the path's business (`Path`): `judge.transport.fastpath`
pushes prebuilt messages and collects results from a reply list, `judge.transport.stockpath` uses
``send_task`` and Celery's result backend.

Faults, checked about once a second while waiting, on both paths:

* the client disconnected: the path cancels the request's tasks that have not started yet;
* Redis lost its data (restart without persistence): the request's live key is gone, so every
  unanswered submission gets ``internal_error`` at once instead of waiting for the deadline;
* Redis unreachable: ``internal_error`` for the unanswered submissions.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from judge.contracts import Job, ResultDict, RunPayload
from judge.errors import RedisDataLost
from judge.results import internal_error, queue_timeout
from judge.transport.lanes import Lane
from judge.transport.shard import Shard

logger = logging.getLogger('judge.transport.dispatch')

CHECK_EVERY_S = 1.0
LIVE_TTL_S = 30
"""The live key's lifetime, renewed at every check while its request waits, so a finished request
leaves nothing to delete: its live key expires within this time."""
# While more than this many results are outstanding, pause between waits so that each takes several
# results at once: one round trip per result would dominate the gateway's CPU in a long batch.  The
# last results are taken as they come, so a batch never ends later.
_COALESCE_ABOVE = 32
_COALESCE_S = 0.025

Disconnected = Callable[[], Awaitable[bool]]


class Waiting(Protocol):
    """One published request, as its path waits for it."""

    async def take(self, timeout_s: float, most: int) -> list[tuple[int, ResultDict]]:
        """``(index, result)`` pairs that arrived within ``timeout_s`` (at most about ``most``)."""

    async def cancel(self, remaining_s: float) -> None:
        """Ask the workers to skip the tasks that have not started (best effort, never raises)."""

    async def close(self, drained: bool) -> None:
        """Release what the request holds (``drained``: every result was taken)."""


class Path(Protocol):
    """How messages travel: publish a request's jobs, then wait for them."""

    name: str

    async def publish(
        self, payloads: list[RunPayload], batch: str, lane: Lane, expires_s: float, request_id: str
    ) -> Waiting:
        """Publish one job per payload (`make_jobs`) and set the request's live key (``LIVE_TTL_S``)."""


def make_jobs(payloads: list[RunPayload], reply_to: str | None, batch: str, wait_s: float) -> list[Job]:
    """One `Job` per payload, indexed in order; ``wait_s``: how long the gateway waits for them."""
    return [
        {'sub': p, 'reply_to': reply_to, 'index': i, 'batch': batch, 'wait_s': wait_s} for i, p in enumerate(payloads)
    ]


def argsrepr(job: Job) -> str:
    """What Flower shows as a task's arguments: the ids to grep for."""
    sub = job['sub']
    return f'(sub_id={sub.get("sub_id")!r}, type={sub.get("type")!r}, batch={job["batch"]!r})'


@dataclass
class Outcome:
    """One request's results on one shard, and which of them the shard's failure cost."""

    results: list[ResultDict]
    lost: list[int] = field(default_factory=list)
    """Indices answered ``internal_error`` because the shard failed (publishing, Redis unreachable,
    Redis lost its data), not because of the program: the router may run them on another shard."""
    error: str = ''


class Dispatcher:
    """Runs requests on one shard through one path."""

    def __init__(self, shard: Shard, path: Path) -> None:
        self.shard = shard
        self.path = path

    async def aclose(self) -> None:
        """Release the path's threads (a path that holds some has ``close()``) and the shard's asyncio client."""
        close = getattr(self.path, 'close', None)
        if close is not None:
            close()
        await self.shard.aclose()

    async def run(
        self,
        payloads: list[RunPayload],
        lane: Lane,
        wait_s: float,
        batch: str,
        disconnected: Disconnected | None = None,
    ) -> list[ResultDict]:
        """Run every payload; results in order, `queue_timeout` for those that missed the deadline ``wait_s``
        (the lane's, or what `judge.transport.router.Router` has left of it)."""
        return (await self.run_outcome(payloads, lane, wait_s, batch, disconnected)).results

    async def run_outcome(
        self,
        payloads: list[RunPayload],
        lane: Lane,
        wait_s: float,
        batch: str,
        disconnected: Disconnected | None = None,
    ) -> Outcome:
        """`run`, telling the shard's failures apart (`Outcome.lost`)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + wait_s
        request_id = uuid.uuid4().hex
        try:
            waiting = await self.path.publish(payloads, batch, lane, wait_s, request_id)
        except Exception as exc:
            logger.exception('batch=%s: publishing on %s failed', batch, self.shard.name)
            error = f'could not enqueue: {type(exc).__name__}: {exc}'
            return Outcome([internal_error(p['sub_id'], error) for p in payloads], list(range(len(payloads))), error)
        results: list[ResultDict | None] = [None] * len(payloads)
        drained = False
        error = ''
        try:
            await self._collect(waiting, self.shard.keys.live(request_id), results, deadline, disconnected)
            drained = all(r is not None for r in results)
        except RedisDataLost:
            logger.error('batch=%s: Redis %s lost the queued work (restarted?)', batch, self.shard.name)
            error = 'the queue lost this submission (Redis restarted)'
        except Exception as exc:
            logger.exception('batch=%s: waiting for results on %s failed', batch, self.shard.name)
            error = f'lost contact with the queue: {type(exc).__name__}: {exc}'
        finally:
            await waiting.close(drained)
        lost = [i for i, r in enumerate(results) if r is None] if error else []
        for i in lost:
            results[i] = internal_error(payloads[i]['sub_id'], error)
        waited = loop.time() - started
        missing = sum(r is None for r in results)
        if missing:
            logger.warning(
                'batch=%s: %d of %d submissions missed the %.0fs deadline', batch, missing, len(results), wait_s
            )
        answers = [
            r if r is not None else queue_timeout(p['sub_id'], waited) for r, p in zip(results, payloads, strict=True)
        ]
        return Outcome(answers, lost, error)

    async def _collect(
        self,
        waiting: Waiting,
        live_key: str,
        results: list[ResultDict | None],
        deadline: float,
        disconnected: Disconnected | None,
    ) -> None:
        """Fill ``results`` until complete, the deadline, or the client leaves."""
        loop = asyncio.get_running_loop()
        missing = len(results)
        next_check = loop.time() + CHECK_EVERY_S
        while missing:
            now = loop.time()
            remaining = deadline - now
            if remaining <= 0:
                return
            if now >= next_check:  # also while results stream in: a long batch is never idle
                next_check = now + CHECK_EVERY_S
                if disconnected is not None and await disconnected():
                    await waiting.cancel(remaining)
                    logger.info('request %s: client went away; cancelled %d submissions', live_key, missing)
                    return
                if not await self.shard.aclient.expire(live_key, LIVE_TTL_S):  # renewed, if still there
                    raise RedisDataLost(live_key)
            for index, result in await waiting.take(min(remaining, CHECK_EVERY_S), missing):
                if 0 <= index < len(results) and results[index] is None:
                    results[index] = result
                    missing -= 1
            if missing > _COALESCE_ABOVE:
                await asyncio.sleep(min(_COALESCE_S, max(0.0, deadline - loop.time())))
