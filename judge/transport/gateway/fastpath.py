"""The fast path on the gateway: prebuilt messages pushed in pipelines, results from a reply list.

Publishing: each job's message is built by `judge.transport.internals.envelope` and a request's messages go
out with one ``LPUSH`` per slice of `PUBLISH_SLICE`, pipelined on the asyncio client together with
the request's live key.  Waiting: workers push ``[index, result]`` onto the request's reply list
(`judge.transport.worker.replies`); one ``BLMPOP`` takes every result that is there.  Cancelling: the reply
key joins the shard's cancelled ZSET, which workers read (`judge.transport.worker.replies.CancelWatch`).
After a broker fault the unanswered jobs go out again with a new reply list (the request's next
attempt) while the earlier ones join the cancelled ZSET; the gateway reads them all.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from celery import Celery
from redis.exceptions import ResponseError

from judge.contracts import RUN_TASK, ResultDict, RunPayload
from judge.transport.gateway.lanes import Lane
from judge.transport.gateway.waiting import LIVE_TTL_S, argsrepr, make_jobs
from judge.transport.internals.envelope import Envelopes
from judge.transport.shard import Shard

logger = logging.getLogger('judge.transport.gateway.fastpath')

PUBLISH_SLICE = 200
_CANCEL_MARGIN_S = 60.0


class FastPath:
    """Publishes on one shard with prebuilt messages; results come back on reply lists."""

    name = 'fast'

    def __init__(self, app: Celery, shard: Shard) -> None:
        self.shard = shard
        self.envelopes = Envelopes(app)
        self.has_blmpop = True

    def open(self, payloads: list[RunPayload], batch: str, lane: Lane, request_id: str) -> FastWaiting:
        """The request's reply lists and live key; nothing is published yet."""
        return FastWaiting(self, payloads, batch, lane, request_id)


class FastWaiting:
    """One request: its jobs, one reply list per attempt, its live key."""

    settle_s = 0.25

    def __init__(self, path: FastPath, payloads: list[RunPayload], batch: str, lane: Lane, request_id: str) -> None:
        self.path = path
        self.payloads = payloads
        self.batch = batch
        self.lane = lane
        self.request_id = request_id
        self.live_key = path.shard.keys.live(request_id)
        self.reply_keys: list[str] = []
        """One per attempt, in order; every one is read, and the workers skip all but the last."""

    async def publish(self, indices: list[int], expires_s: float) -> None:
        """The live key, then the jobs (one Celery group), one round trip per `PUBLISH_SLICE` jobs.

        A later attempt first adds the earlier attempts' reply lists to the cancelled ZSET, so
        workers skip their copies that are still queued (`judge.transport.worker.replies.CancelWatch`).
        """
        keys, lane = self.path.shard.keys, self.lane
        attempt = len(self.reply_keys)
        reply_to = keys.reply(self.request_id, attempt)
        earlier = list(self.reply_keys)
        self.reply_keys.append(reply_to)
        jobs = make_jobs(self.payloads, indices, reply_to, self.batch, expires_s)
        target = keys.queue_list(lane.queue, lane.priority)
        pipe = self.path.shard.aclient.pipeline(transaction=False)
        if earlier:
            self._cancel_in(pipe, earlier, expires_s)
        pipe.set(self.live_key, 1, ex=LIVE_TTL_S)
        for start in range(0, len(jobs), PUBLISH_SLICE):
            pipe.lpush(
                target,
                *(
                    self.path.envelopes.build(
                        RUN_TASK,
                        (job,),
                        queue=lane.queue,
                        priority=lane.priority,
                        expires_s=expires_s,
                        group_id=self.batch,
                        group_index=job['index'],
                        argsrepr=argsrepr(job, attempt),
                    )
                    for job in jobs[start : start + PUBLISH_SLICE]
                ),
            )
            if start + PUBLISH_SLICE < len(jobs):
                await pipe.execute()  # bound the size of one pipeline
        await pipe.execute()

    async def _pop(self, timeout_s: float, count: int) -> Any:
        """Wait for results; one round trip returns all that are there (BLMPOP, Redis >= 7)."""
        redis = self.path.shard.aclient
        keys = self.reply_keys
        if self.path.has_blmpop:
            try:
                return await redis.blmpop(timeout_s, len(keys), *keys, direction='LEFT', count=count)
            except ResponseError as e:
                if 'unknown command' not in str(e).lower():
                    raise
                logger.warning('Redis has no BLMPOP (older than 7.0): falling back to BLPOP + LPOP')
                self.path.has_blmpop = False
        item = await redis.blpop(keys, timeout=timeout_s)
        if item is None:
            return None
        rest: Any = await redis.lpop(item[0], count - 1) if count > 1 else None
        return item[0], [item[1], *(rest or [])]

    async def take(self, timeout_s: float, most: int) -> list[tuple[int, ResultDict]]:
        """The ``[index, result]`` pairs on the reply lists (waits up to ``timeout_s`` for the first)."""
        item = await self._pop(timeout_s, most)
        if not item:
            return []
        out: list[tuple[int, ResultDict]] = []
        for entry in item[1]:
            index, result = json.loads(entry)
            out.append((int(index), result))
        return out

    def _cancel_in(self, pipe: Any, reply_keys: list[str], remaining_s: float) -> None:
        """Queue on ``pipe``: add ``reply_keys`` to the cancelled ZSET, scored by when they stop mattering."""
        keys, now = self.path.shard.keys, time.time()
        expiry = now + max(0.0, remaining_s) + _CANCEL_MARGIN_S
        pipe.zadd(keys.cancelled, dict.fromkeys(reply_keys, expiry))
        pipe.zremrangebyscore(keys.cancelled, '-inf', now)
        # GT/NX need Redis >= 7; on older servers the ZADD above still lands (no transaction).
        pipe.expireat(keys.cancelled, int(expiry) + 1, gt=True)
        pipe.expireat(keys.cancelled, int(expiry) + 1, nx=True)

    async def cancel(self, remaining_s: float) -> None:
        """Add every attempt's reply list to the cancelled ZSET: workers skip what has not started."""
        try:
            pipe = self.path.shard.aclient.pipeline(transaction=False)
            self._cancel_in(pipe, self.reply_keys, remaining_s)
            await pipe.execute()
        except Exception:  # the tasks still expire at the deadline
            logger.warning('%s: could not record the cancellation', self.live_key, exc_info=True)

    async def close(self, drained: bool) -> None:
        """A drained single attempt leaves nothing (its reply list went with the last pop, the live key
        expires by itself); otherwise delete the reply lists and the live key."""
        if drained and len(self.reply_keys) <= 1:
            return
        try:
            await self.path.shard.aclient.delete(*self.reply_keys, self.live_key)
        except Exception:  # the keys expire on their own
            logger.warning('could not delete the keys of %s', self.live_key)
