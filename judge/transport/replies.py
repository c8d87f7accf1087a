"""The worker's side of a request: is it still wanted, and where its result goes.

* `Replies.deliver`: a job that names a reply list (fast path) has ``[index, result]`` pushed there
  (packed commands on a held connection, redis-py's pipeline if that fails); a job without one
  (stock path) gets its result back, for the task to return to Celery's result backend.
* `CancelWatch.is_cancelled`: whether the job's client went away (the gateway added its reply
  list to the shard's cancelled ZSET).  One Redis read per process at most every `CANCEL_POLL_S`,
  whatever the task rate; otherwise a set lookup.  The stock path cancels with Celery's ``revoke``
  instead, so its jobs are never looked up here.
"""

from __future__ import annotations

import json
import logging
import time

import redis

from judge.contracts import Job, ResultDict
from judge.transport.internals.packed import PackedCalls
from judge.transport.shard import Shard

logger = logging.getLogger('judge.transport.replies')

CANCEL_POLL_S = 0.25


class Replies:
    """Delivers results to the shard's reply lists (one instance per pool process)."""

    def __init__(self, shard: Shard, ttl_s: int, packed: bool = True) -> None:
        self.shard = shard
        self.ttl_s = ttl_s
        self._packed: PackedCalls | None = PackedCalls(lambda: shard.client.connection_pool) if packed else None

    def deliver(self, job: Job, result: ResultDict) -> ResultDict | None:
        """Push ``result`` to the job's reply list and return None, or return it (no reply list)."""
        reply_to = job.get('reply_to')
        if not reply_to:
            return result
        self.push(reply_to, job['index'], result)
        return None

    def push(self, reply_to: str, index: int, result: ResultDict) -> None:
        """Append ``[index, result]`` to ``reply_to`` (the gateway de-duplicates)."""
        item = json.dumps([index, result], separators=(',', ':'))
        commands = [('RPUSH', reply_to, item), ('EXPIRE', reply_to, self.ttl_s)]
        if self._packed is not None and self._packed.call(commands) is not None:
            return
        pipe = self.shard.client.pipeline(transaction=False)
        pipe.rpush(reply_to, item)
        pipe.expire(reply_to, self.ttl_s)
        pipe.execute()


class CancelWatch:
    """This process's copy of the shard's cancelled ZSET, refreshed at most every `CANCEL_POLL_S`."""

    def __init__(self, shard: Shard) -> None:
        self.shard = shard
        self.keys: frozenset[str] = frozenset()
        self.next_poll = 0.0

    def is_cancelled(self, job: Job) -> bool:
        """Whether the request behind ``job`` was abandoned by its client.

        A Redis error keeps the previous copy: never fail a submission over it.
        """
        reply_to = job.get('reply_to')
        if not reply_to:
            return False
        now = time.monotonic()
        if now >= self.next_poll:
            self.next_poll = now + CANCEL_POLL_S
            key = self.shard.keys.cancelled
            try:
                members = self.shard.client.zrangebyscore(key, time.time(), '+inf')
            except redis.RedisError as exc:
                logger.warning('could not read %s: %s', key, exc)
            else:
                self.keys = frozenset(m.decode() if isinstance(m, bytes) else str(m) for m in members)
        return reply_to in self.keys
