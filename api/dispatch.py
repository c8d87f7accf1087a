"""Publish submissions as Celery tasks and wait for their answers without blocking the event loop.

Each request gets its own Redis reply list.  Its submissions are published as one Celery group
(shared ``group_id``, one task per submission) with pipelined ``LPUSH`` on the asyncio Redis client
(`api.publish`: Celery builds each message, kombu's Redis layout is kept); the handler then
awaits ``BLMPOP`` on the reply list until every index has answered or the route's deadline passes.
Unanswered submissions become ``queue_timeout`` and their tasks expire at the deadline, so nobody
runs them for a client that has gone.

Faults, checked about once a second while waiting:

* the client disconnected: the reply key joins the ``judge:cancelled`` ZSET (`CANCELLED_KEY`), and
  workers skip the request's tasks that have not started yet (see ``judge.tasks.is_cancelled``);
* Redis lost its data (restart without persistence): the request's liveness key is gone, so every
  unanswered submission gets ``internal_error`` at once instead of waiting for the deadline;
* Redis unreachable: ``internal_error`` for the unanswered submissions.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from celery import Celery
from redis.exceptions import ResponseError

from api.publish import TaskMessages
from judge.contracts import (
    CANCELLED_KEY,
    PRIORITY_BATCH,
    PRIORITY_LONG,
    PRIORITY_RUN,
    QUEUE_BATCH,
    QUEUE_LONG,
    QUEUE_RUN,
    REPLY_KEY_PREFIX,
    RUN_TASK,
    Verdict,
    infra_failure,
)

logger = logging.getLogger('api.dispatch')

_PUBLISH_SLICE = 200
_POLL_SLICE_S = 1.0
_CHECK_EVERY_S = 1.0
_CANCEL_MARGIN_S = 60.0
# While more than this many results are outstanding, pause between pops so that each pop takes
# several results: one round trip per result cost about 0.3 ms of the gateway's CPU per submission
# in a long batch.  The last results are popped as they come, so a batch never ends later.
_COALESCE_ABOVE = 32
_COALESCE_S = 0.025

# Same name in judge/tasks.py (the worker must not import the gateway); a test checks they agree.
"""ZSET of abandoned reply keys, scored by expiry (epoch s); read by `judge.tasks.is_cancelled`."""
LIVE_KEY_PREFIX = 'judge:live:'
"""``judge:live:<request>`` exists while a request waits; if Redis loses it, Redis lost the queue too."""
_LIVE_TTL_S = 30
"""The live key's lifetime, renewed at every check (each `_CHECK_EVERY_S`) while its request waits,
so a finished request leaves nothing to delete: its reply list went with its last pop, and its live
key expires within this time."""


class RedisDataLost(RuntimeError):
    """Redis no longer holds a waiting request's keys: it restarted (or was flushed)."""


@dataclass(frozen=True)
class Route:
    """How one kind of route is queued and how long it waits."""

    name: str
    queue: str
    priority: int
    wait_s: float


def routes_for(wait_s: float, long_wait_s: float) -> dict[str, Route]:
    """The three route kinds: single outranks batch, which outranks long-batch."""
    return {
        'single': Route('single', QUEUE_RUN, PRIORITY_RUN, wait_s),
        'batch': Route('batch', QUEUE_BATCH, PRIORITY_BATCH, wait_s),
        'long': Route('long', QUEUE_LONG, PRIORITY_LONG, long_wait_s),
    }


def queue_timeout(sub_id: str, waited_s: float) -> dict[str, Any]:
    """Upstream's answer for a submission that did not finish in time."""
    return infra_failure(sub_id, Verdict.QUEUE_TIMEOUT, waited_s)


def internal_error(sub_id: str, message: str) -> dict[str, Any]:
    """An infrastructure failure in the gateway (for example Redis unreachable)."""
    return infra_failure(sub_id, Verdict.INTERNAL_ERROR, error=message)


class Dispatcher:
    """Sends submissions to the workers and gathers their results."""

    def __init__(self, celery_app: Celery, redis_client: aioredis.Redis) -> None:
        self.app = celery_app
        self.messages = TaskMessages(celery_app)
        self.redis = redis_client
        self._has_blmpop = True

    async def _publish(
        self, payloads: list[dict[str, Any]], route: Route, reply_to: str, batch_id: str, live_key: str
    ) -> None:
        """The liveness key, then every submission as one task (one Celery group), in one round trip
        for up to `_PUBLISH_SLICE` submissions."""
        key = self.messages.list_key(route.queue, route.priority)
        pipe = self.redis.pipeline(transaction=False)
        pipe.set(live_key, 1, ex=_LIVE_TTL_S)
        for start in range(0, len(payloads), _PUBLISH_SLICE):
            pipe.lpush(
                key,
                *(
                    self.messages.build(
                        RUN_TASK,
                        (sub, reply_to, index, batch_id),
                        queue=route.queue,
                        priority=route.priority,
                        expires_s=route.wait_s,
                        group_id=batch_id,
                        group_index=index,
                        argsrepr=f'(sub_id={sub.get("sub_id")!r}, type={sub.get("type")!r}, batch={batch_id!r})',
                    )
                    for index, sub in enumerate(payloads[start : start + _PUBLISH_SLICE], start)
                ),
            )
            if start + _PUBLISH_SLICE < len(payloads):
                await pipe.execute()  # bound the size of one pipeline
        await pipe.execute()

    async def run(
        self,
        payloads: list[dict[str, Any]],
        route: Route,
        batch_id: str,
        disconnected: Callable[[], Awaitable[bool]] | None = None,
    ) -> list[dict[str, Any]]:
        """Run every payload; results in order, `queue_timeout` for those that missed the deadline."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + route.wait_s
        request_id = uuid.uuid4().hex
        reply_to = f'{REPLY_KEY_PREFIX}{request_id}'
        live_key = f'{LIVE_KEY_PREFIX}{request_id}'
        try:
            await self._publish(payloads, route, reply_to, batch_id, live_key)
        except Exception as exc:
            logger.exception('batch=%s: publishing failed', batch_id)
            return [internal_error(p['sub_id'], f'could not enqueue: {type(exc).__name__}: {exc}') for p in payloads]
        results: list[dict[str, Any] | None] = [None] * len(payloads)
        drained = False
        try:
            await self._collect(reply_to, live_key, results, deadline, disconnected)
            drained = all(r is not None for r in results)
        except RedisDataLost:
            logger.error('batch=%s: Redis lost the queued work (restarted?)', batch_id)
            for i, p in enumerate(payloads):
                if results[i] is None:
                    results[i] = internal_error(p['sub_id'], 'the queue lost this submission (Redis restarted)')
        except Exception as exc:
            logger.exception('batch=%s: waiting for results failed', batch_id)
            for i, p in enumerate(payloads):
                if results[i] is None:
                    results[i] = internal_error(
                        p['sub_id'], f'lost contact with the queue: {type(exc).__name__}: {exc}'
                    )
        finally:
            if not drained:  # else nothing is left: see `_LIVE_TTL_S`
                try:
                    await self.redis.delete(reply_to, live_key)
                except Exception:  # the keys expire on their own
                    logger.warning('batch=%s: could not delete %s', batch_id, reply_to)
        waited = loop.time() - started
        missing = sum(r is None for r in results)
        if missing:
            logger.warning(
                'batch=%s: %d of %d submissions missed the %.0fs deadline',
                batch_id,
                missing,
                len(results),
                route.wait_s,
            )
        return [
            r if r is not None else queue_timeout(p['sub_id'], waited) for r, p in zip(results, payloads, strict=True)
        ]

    async def _pop(self, key: str, timeout_s: float, count: int) -> Any:
        """Wait for results; one round trip returns all that are there (BLMPOP, Redis >= 7)."""
        if self._has_blmpop:
            try:
                return await self.redis.blmpop(timeout_s, 1, key, direction='LEFT', count=count)
            except ResponseError as e:
                if 'unknown command' not in str(e).lower():
                    raise
                logger.warning('Redis has no BLMPOP (older than 7.0): falling back to BLPOP + LPOP')
                self._has_blmpop = False
        item = await self.redis.blpop([key], timeout=timeout_s)
        if item is None:
            return None
        rest: Any = await self.redis.lpop(key, count - 1) if count > 1 else None
        return item[0], [item[1], *(rest or [])]

    async def _collect(
        self,
        reply_to: str,
        live_key: str,
        results: list[dict[str, Any] | None],
        deadline: float,
        disconnected: Callable[[], Awaitable[bool]] | None,
    ) -> None:
        """Fill ``results`` from the reply list until complete, the deadline, or the client leaves."""
        loop = asyncio.get_running_loop()
        missing = len(results)
        next_check = loop.time() + _CHECK_EVERY_S
        while missing:
            now = loop.time()
            remaining = deadline - now
            if remaining <= 0:
                return
            if now >= next_check:  # also while results stream in: a long batch is never idle
                next_check = now + _CHECK_EVERY_S
                if disconnected is not None and await disconnected():
                    await self._cancel(reply_to, deadline - now)
                    logger.info('%s: client went away; cancelled %d submissions', reply_to, missing)
                    return
                if not await self.redis.expire(live_key, _LIVE_TTL_S):  # renewed, if it is still there
                    raise RedisDataLost(live_key)
            item: Any = await self._pop(reply_to, min(remaining, _POLL_SLICE_S, _CHECK_EVERY_S), missing)
            if not item:
                continue
            for entry in item[1]:
                index, result = json.loads(entry)
                if 0 <= index < len(results) and results[index] is None:
                    results[index] = result
                    missing -= 1
            if missing > _COALESCE_ABOVE:
                await asyncio.sleep(min(_COALESCE_S, max(0.0, deadline - loop.time())))

    async def _cancel(self, reply_to: str, remaining_s: float) -> None:
        """Tell the workers to skip the request's tasks that have not started (best effort)."""
        now = time.time()
        expiry = now + max(0.0, remaining_s) + _CANCEL_MARGIN_S
        try:
            pipe = self.redis.pipeline(transaction=False)
            pipe.zadd(CANCELLED_KEY, {reply_to: expiry})
            pipe.zremrangebyscore(CANCELLED_KEY, '-inf', now)
            # GT/NX need Redis >= 7; on older servers the ZADD above still lands (no transaction).
            pipe.expireat(CANCELLED_KEY, int(expiry) + 1, gt=True)
            pipe.expireat(CANCELLED_KEY, int(expiry) + 1, nx=True)
            await pipe.execute()
        except Exception:  # the tasks still expire at the deadline
            logger.warning('%s: could not record the cancellation', reply_to, exc_info=True)
