"""Publish submissions as Celery tasks and wait for their answers without blocking the event loop.

Each request gets its own Redis reply list.  Its submissions are published as one Celery group
(shared ``group_id``, one task per submission) in a pipelined producer batch from a thread; the
handler then awaits ``BLPOP`` on the reply list until every index has answered or the route's
deadline passes.  Unanswered submissions become ``queue_timeout`` and their tasks expire at the
deadline, so nobody runs them for a client that has gone.
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

from judge.contracts import (
    PRIORITY_BATCH,
    PRIORITY_LONG,
    PRIORITY_RUN,
    QUEUE_BATCH,
    QUEUE_LONG,
    QUEUE_RUN,
    REPLY_KEY_PREFIX,
    RUN_TASK,
    Verdict,
)

logger = logging.getLogger('api.dispatch')

_PUBLISH_SLICE = 200
_POLL_SLICE_S = 1.0


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
    return {
        'sub_id': sub_id,
        'success': False,
        'run_success': False,
        'cost': round(waited_s, 6),
        'stdout': None,
        'stderr': None,
        'reason': 'queue_timeout',
        'verdict': Verdict.QUEUE_TIMEOUT.value,
    }


def internal_error(sub_id: str, message: str) -> dict[str, Any]:
    """An infrastructure failure in the gateway (for example Redis unreachable)."""
    return {
        'sub_id': sub_id,
        'success': False,
        'run_success': False,
        'cost': 0.0,
        'stdout': None,
        'stderr': None,
        'reason': 'internal_error',
        'verdict': Verdict.INTERNAL_ERROR.value,
        'error': message,
    }


class Dispatcher:
    """Sends submissions to the workers and gathers their results."""

    def __init__(self, celery_app: Celery, redis_client: aioredis.Redis) -> None:
        self.app = celery_app
        self.redis = redis_client
        self._has_blmpop = True

    def _publish(
        self, payloads: list[dict[str, Any]], route: Route, reply_to: str, batch_id: str, expires_at: float
    ) -> None:
        with self.app.producer_or_acquire() as producer:
            for start in range(0, len(payloads), _PUBLISH_SLICE):
                with producer.batch(max_size=_PUBLISH_SLICE):
                    for index in range(start, min(start + _PUBLISH_SLICE, len(payloads))):
                        sub = payloads[index]
                        self.app.send_task(
                            RUN_TASK,
                            args=(sub, reply_to, index, batch_id),
                            queue=route.queue,
                            routing_key=route.queue,
                            priority=route.priority,
                            producer=producer,
                            ignore_result=True,
                            expires=expires_at - time.time(),
                            group_id=batch_id,
                            group_index=index,
                            argsrepr=f'(sub_id={sub.get("sub_id")!r}, type={sub.get("type")!r}, batch={batch_id!r})',
                            kwargsrepr='{}',
                        )

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
        reply_to = f'{REPLY_KEY_PREFIX}{uuid.uuid4().hex}'
        try:
            await asyncio.to_thread(self._publish, payloads, route, reply_to, batch_id, time.time() + route.wait_s)
        except Exception as exc:
            logger.exception('batch=%s: publishing failed', batch_id)
            return [internal_error(p['sub_id'], f'could not enqueue: {type(exc).__name__}: {exc}') for p in payloads]
        results: list[dict[str, Any] | None] = [None] * len(payloads)
        try:
            await self._collect(reply_to, results, deadline, disconnected)
        except Exception as exc:
            logger.exception('batch=%s: waiting for results failed', batch_id)
            for i, p in enumerate(payloads):
                if results[i] is None:
                    results[i] = internal_error(
                        p['sub_id'], f'lost contact with the queue: {type(exc).__name__}: {exc}'
                    )
        finally:
            try:
                await self.redis.delete(reply_to)
            except Exception:  # the key expires on its own
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
        results: list[dict[str, Any] | None],
        deadline: float,
        disconnected: Callable[[], Awaitable[bool]] | None,
    ) -> None:
        loop = asyncio.get_running_loop()
        missing = len(results)
        while missing:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            # One round trip returns every result already there (BLMPOP, Redis >= 7).
            item: Any = await self.redis.blmpop(
                min(remaining, _POLL_SLICE_S), 1, reply_to, direction='LEFT', count=missing
            )
            if not item:
                if disconnected is not None and await disconnected():
                    logger.info('%s: client went away; abandoning %d submissions', reply_to, missing)
                    return
                continue
            raw = item[1]
            for entry in raw:
                index, result = json.loads(entry)
                if 0 <= index < len(results) and results[index] is None:
                    results[index] = result
                    missing -= 1
