"""The worker's side of a request: is it still wanted, and where its result goes.

* `Replies.deliver`: a job that names a reply list (fast path) has ``[index, result]`` pushed there
  (packed commands on a held connection, redis-py's pipeline if that fails); a job without one
  (stock path) gets its result back, for the task to return to Celery's result backend (whose
  retries ``celeryconfig.py`` sets).  While the broker is away the push is tried again with backoff,
  for up to ``JUDGE_BROKER_OUTAGE_S`` (and never past the caller's ``until``), so a result computed
  during an outage reaches the gateway once the broker is back.
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

logger = logging.getLogger('judge.transport.worker.replies')

CANCEL_POLL_S = 0.25
RETRY_FIRST_S = 0.25
RETRY_MAX_S = 2.0


class Replies:
    """Delivers results to the shard's reply lists (one instance per pool process)."""

    def __init__(self, shard: Shard, ttl_s: int, packed: bool = True, hold_s: float = 60.0) -> None:
        self.shard = shard
        self.ttl_s = ttl_s
        self.hold_s = hold_s
        """The longest a result waits for the broker to come back (``JUDGE_BROKER_OUTAGE_S``)."""
        self._packed: PackedCalls | None = PackedCalls(lambda: shard.client.connection_pool) if packed else None

    def deliver(self, job: Job, result: ResultDict, until: float | None = None) -> ResultDict | None:
        """Push ``result`` to the job's reply list and return None, or return it (no reply list).

        ``until`` (``time.monotonic()``) bounds the retries, with `hold_s`.
        """
        reply_to = job.get('reply_to')
        if not reply_to:
            return result
        self.push(reply_to, job['index'], result, until)
        return None

    def push(self, reply_to: str, index: int, result: ResultDict, until: float | None = None) -> None:
        """Append ``[index, result]`` to ``reply_to`` (the gateway de-duplicates), retrying while the
        broker is away, up to `hold_s` and ``until``; then the last error is raised."""
        item = json.dumps([index, result], separators=(',', ':'))
        end = time.monotonic() + self.hold_s
        if until is not None:
            end = min(end, until)
        delay, tries = RETRY_FIRST_S, 0
        while True:
            try:
                self._push_once(reply_to, item)
            except (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError, OSError) as exc:
                tries += 1
                if time.monotonic() + delay > end:
                    logger.error('%s: result %d not delivered after %d tries: %s', reply_to, index, tries, exc)
                    raise
                if tries == 1:
                    logger.warning('%s: broker unreachable (%s); holding result %d', reply_to, exc, index)
                time.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)
                continue
            if tries:
                logger.warning('%s: result %d delivered after %d failed tries', reply_to, index, tries)
            return

    def _push_once(self, reply_to: str, item: str) -> None:
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
