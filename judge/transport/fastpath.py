"""The fast path on the gateway: prebuilt messages pushed in pipelines, results from a reply list.

Publishing: each job's message is built by `judge.transport.internals.envelope` and a request's messages go
out with one ``LPUSH`` per slice of `PUBLISH_SLICE`, pipelined on the asyncio client together with
the request's live key.  Waiting: workers push ``[index, result]`` onto the request's reply list
(`judge.transport.replies`); one ``BLMPOP`` takes every result that is there.  Cancelling: the reply
key joins the shard's cancelled ZSET, which workers read (`judge.transport.replies.CancelWatch`).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from celery import Celery
from redis.exceptions import ResponseError

from judge.contracts import RUN_TASK, ResultDict, RunPayload
from judge.transport.dispatch import LIVE_TTL_S, argsrepr, make_jobs
from judge.transport.internals.envelope import Envelopes
from judge.transport.lanes import Lane
from judge.transport.shard import Shard

logger = logging.getLogger('judge.transport.fastpath')

PUBLISH_SLICE = 200
_CANCEL_MARGIN_S = 60.0


class FastPath:
    """Publishes on one shard with prebuilt messages; results come back on reply lists."""

    name = 'fast'

    def __init__(self, app: Celery, shard: Shard) -> None:
        self.shard = shard
        self.envelopes = Envelopes(app)
        self.has_blmpop = True

    async def publish(
        self, payloads: list[RunPayload], batch: str, lane: Lane, expires_s: float, request_id: str
    ) -> FastWaiting:
        """The live key, then every job (one Celery group), one round trip per `PUBLISH_SLICE` jobs."""
        keys = self.shard.keys
        reply_to, live_key = keys.reply(request_id), keys.live(request_id)
        jobs = make_jobs(payloads, reply_to, batch, expires_s)
        target = keys.queue_list(lane.queue, lane.priority)
        pipe = self.shard.aclient.pipeline(transaction=False)
        pipe.set(live_key, 1, ex=LIVE_TTL_S)
        for start in range(0, len(jobs), PUBLISH_SLICE):
            pipe.lpush(
                target,
                *(
                    self.envelopes.build(
                        RUN_TASK,
                        (job,),
                        queue=lane.queue,
                        priority=lane.priority,
                        expires_s=expires_s,
                        group_id=batch,
                        group_index=job['index'],
                        argsrepr=argsrepr(job),
                    )
                    for job in jobs[start : start + PUBLISH_SLICE]
                ),
            )
            if start + PUBLISH_SLICE < len(jobs):
                await pipe.execute()  # bound the size of one pipeline
        await pipe.execute()
        return FastWaiting(self, reply_to, live_key)


class FastWaiting:
    """One request's reply list."""

    def __init__(self, path: FastPath, reply_to: str, live_key: str) -> None:
        self.path = path
        self.reply_to = reply_to
        self.live_key = live_key

    async def _pop(self, timeout_s: float, count: int) -> Any:
        """Wait for results; one round trip returns all that are there (BLMPOP, Redis >= 7)."""
        redis = self.path.shard.aclient
        if self.path.has_blmpop:
            try:
                return await redis.blmpop(timeout_s, 1, self.reply_to, direction='LEFT', count=count)
            except ResponseError as e:
                if 'unknown command' not in str(e).lower():
                    raise
                logger.warning('Redis has no BLMPOP (older than 7.0): falling back to BLPOP + LPOP')
                self.path.has_blmpop = False
        item = await redis.blpop([self.reply_to], timeout=timeout_s)
        if item is None:
            return None
        rest: Any = await redis.lpop(self.reply_to, count - 1) if count > 1 else None
        return item[0], [item[1], *(rest or [])]

    async def take(self, timeout_s: float, most: int) -> list[tuple[int, ResultDict]]:
        """The ``[index, result]`` pairs on the reply list (waits up to ``timeout_s`` for the first)."""
        item = await self._pop(timeout_s, most)
        if not item:
            return []
        out: list[tuple[int, ResultDict]] = []
        for entry in item[1]:
            index, result = json.loads(entry)
            out.append((int(index), result))
        return out

    async def cancel(self, remaining_s: float) -> None:
        """Add the reply key to the cancelled ZSET, scored by when it stops mattering."""
        keys, now = self.path.shard.keys, time.time()
        expiry = now + max(0.0, remaining_s) + _CANCEL_MARGIN_S
        try:
            pipe = self.path.shard.aclient.pipeline(transaction=False)
            pipe.zadd(keys.cancelled, {self.reply_to: expiry})
            pipe.zremrangebyscore(keys.cancelled, '-inf', now)
            # GT/NX need Redis >= 7; on older servers the ZADD above still lands (no transaction).
            pipe.expireat(keys.cancelled, int(expiry) + 1, gt=True)
            pipe.expireat(keys.cancelled, int(expiry) + 1, nx=True)
            await pipe.execute()
        except Exception:  # the tasks still expire at the deadline
            logger.warning('%s: could not record the cancellation', self.reply_to, exc_info=True)

    async def close(self, drained: bool) -> None:
        """A drained reply list is gone already and the live key expires by itself; else delete both."""
        if drained:
            return
        try:
            await self.path.shard.aclient.delete(self.reply_to, self.live_key)
        except Exception:  # the keys expire on their own
            logger.warning('could not delete %s', self.reply_to)
