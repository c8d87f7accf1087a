"""The stock path on the gateway: Celery's public API only.

Publishing: ``app.send_task`` per job, on one producer, in a thread (it is synchronous).  Waiting:
the worker's task returns its result and Celery stores it in the result backend (the same Redis);
the gateway collects with ``ResultSet.join_native`` in slices, in a thread.  Cancelling:
``app.control.revoke``.  After a broker fault the unanswered jobs are sent again with new task ids
(the request's next attempt) and the earlier ids are revoked; the gateway waits for every id.
Slower than `judge.transport.gateway.fastpath`, but nothing here depends on how Celery, kombu or redis-py
work inside, so an upgrade cannot break it silently.

The threads: Celery's result backend is per thread, so a small dedicated pool (`THREADS`) serves
every request of the process; a request holds one thread only while it publishes or waits for a
slice.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from celery import Celery
from celery.exceptions import TaskRevokedError
from celery.exceptions import TimeoutError as CeleryTimeout
from celery.result import ResultSet

from judge.contracts import RUN_TASK, Job, ResultDict, RunPayload
from judge.results import internal_error
from judge.transport.gateway.lanes import Lane
from judge.transport.gateway.outage import describe, is_broker_fault
from judge.transport.gateway.waiting import LIVE_TTL_S, argsrepr, make_jobs
from judge.transport.shard import Shard

logger = logging.getLogger('judge.transport.gateway.stockpath')

THREADS = 32
_REJOIN_S = 0.1
REVOKE_AGAIN_S = 5.0
"""A republish revokes the superseded tasks at once and again this much later (Celery's revoke is a
broadcast: a worker still reconnecting to the broker misses it)."""
JOIN_POLL_S = 0.005
"""``join_native``'s ``interval``: Celery first reads every pending result (one MGET), then sleeps this
long if any is missing before it waits for their pub/sub messages (0.5 s by default)."""


class StockPath:
    """Publishes with ``send_task``; results come back through Celery's result backend."""

    name = 'stock'

    def __init__(self, app: Celery, shard: Shard, threads: int = THREADS) -> None:
        self.app = app
        self.shard = shard
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix='judge-stock')

    def close(self) -> None:
        """Stop the threads (waiting requests get their answers from the dispatcher's deadline)."""
        self.executor.shutdown(wait=False, cancel_futures=True)

    async def _in_thread(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    def open(self, payloads: list[RunPayload], batch: str, lane: Lane, request_id: str) -> StockWaiting:
        """The request's task ids and live key; nothing is published yet."""
        return StockWaiting(self, payloads, batch, lane, request_id)

    def _send(self, jobs: list[tuple[str, Job]], lane: Lane, expires_s: float, batch: str, attempt: int) -> None:
        with self.app.producer_or_acquire() as producer:
            for task_id, job in jobs:
                self.app.send_task(
                    RUN_TASK,
                    args=(job,),
                    task_id=task_id,
                    queue=lane.queue,
                    priority=lane.priority,
                    expires=expires_s,
                    group_id=batch,
                    group_index=job['index'],
                    ignore_result=False,
                    argsrepr=argsrepr(job, attempt),
                    kwargsrepr='{}',
                    producer=producer,
                )


class StockWaiting:
    """One request's tasks (every attempt's) in Celery's result backend."""

    settle_s = 1.5
    """A join reads the stored results first, then subscribes: a second or so for a large request."""

    def __init__(self, path: StockPath, payloads: list[RunPayload], batch: str, lane: Lane, request_id: str) -> None:
        self.path = path
        self.payloads = payloads
        self.batch = batch
        self.lane = lane
        self.live_key = path.shard.keys.live(request_id)
        self.index: dict[str, int] = {}
        """Task id -> submission index, for every attempt."""
        self.ids: dict[int, list[str]] = {}
        """Submission index -> its task ids, one per attempt."""
        self.pending: set[str] = set()
        """Task ids of unanswered submissions."""
        self.attempts = 0
        self._join: asyncio.Future[tuple[list[tuple[str, Any]], BaseException | None]] | None = None
        self._until = 0.0
        """When the last published tasks expire (the loop's clock)."""
        self._revoke_again: asyncio.TimerHandle | None = None

    async def publish(self, indices: list[int], expires_s: float) -> None:
        """The live key, then one ``send_task`` per job (one Celery group); then the earlier tasks of
        the same submissions still unanswered are revoked, now and `REVOKE_AGAIN_S` later (a worker
        that misses both broadcasts runs its copy: the first answer counts)."""
        attempt = self.attempts
        self.attempts += 1
        self._until = asyncio.get_running_loop().time() + expires_s
        earlier = [task_id for i in indices for task_id in self.ids.get(i, ()) if task_id in self.pending]
        jobs = [(str(uuid.uuid4()), job) for job in make_jobs(self.payloads, indices, None, self.batch, expires_s)]
        for task_id, job in jobs:
            self.index[task_id] = job['index']
            self.ids.setdefault(job['index'], []).append(task_id)
            self.pending.add(task_id)
        await self.path.shard.aclient.set(self.live_key, 1, ex=LIVE_TTL_S)
        await self.path._in_thread(self.path._send, jobs, self.lane, expires_s, self.batch, attempt)
        if earlier:
            await self._revoke(earlier)
            if self._revoke_again is not None:
                self._revoke_again.cancel()
            self._revoke_again = asyncio.get_running_loop().call_later(REVOKE_AGAIN_S, self._again, earlier)

    def _again(self, ids: list[str]) -> None:
        """Revoke ``ids`` once more: workers that were still reconnecting missed the first broadcast."""
        self._revoke_again = None
        left = [task_id for task_id in ids if task_id in self.pending]
        if left:
            task = asyncio.get_running_loop().create_task(self._revoke(left))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())

    def _join_ids(self, ids: list[str], timeout_s: float) -> tuple[list[tuple[str, Any]], BaseException | None]:
        """What arrived within ``timeout_s``, and the error that ended the wait early (kept results first)."""
        got: list[tuple[str, Any]] = []
        results = ResultSet([self.path.app.AsyncResult(task_id) for task_id in ids], app=self.path.app)
        try:
            results.join_native(
                timeout=timeout_s,
                propagate=False,
                interval=JOIN_POLL_S,
                callback=lambda tid, v: got.append((tid, v)),
            )
        except CeleryTimeout:
            pass
        except Exception as exc:
            return got, exc
        return got, None

    async def take(self, timeout_s: float, most: int) -> list[tuple[int, ResultDict]]:
        """Results that Celery stored within ``timeout_s``.

        One join runs at a time, in a thread: one that outlives ``timeout_s`` (the broker is slow or
        away) is waited for again by the next call, while the dispatcher's own checks find out
        whether Redis answers.  A task that failed because its worker lost the broker is no answer:
        its submission is published again at once (a new task, the same deadline).
        """
        if not self.pending:  # what is left was revoked or expired early (a worker's clock ahead)
            await asyncio.sleep(timeout_s)
            return []
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout_s
        while True:
            if self._join is None:
                wait_s = max(0.0, end - loop.time())
                self._join = loop.run_in_executor(self.path.executor, self._join_ids, list(self.pending), wait_s)
            join = self._join
            done, _ = await asyncio.wait({join}, timeout=max(0.0, end - loop.time()))
            if not done:  # still waiting: the next call waits for the same join (the dispatcher checks Redis)
                return []
            self._join = None
            got, error = join.result()
            if error is None or got or loop.time() + _REJOIN_S >= end:
                break
            # A join from before an outage failed: join afresh while there is time.
            logger.info('%s: waiting for results failed: %s', self.live_key, describe(error))
            await asyncio.sleep(_REJOIN_S)
        out: list[tuple[int, ResultDict]] = []
        again: list[int] = []
        for task_id, value in got:
            if task_id not in self.pending:
                continue
            self.pending.discard(task_id)
            index = self.index[task_id]
            if isinstance(value, TaskRevokedError):
                continue  # expired at its deadline (queue_timeout), or an earlier attempt's revoked copy
            if isinstance(value, BaseException) and is_broker_fault(value):
                if not self.pending.intersection(self.ids[index]):
                    again.append(index)  # its worker lost the broker: not an answer
                continue
            self.pending.difference_update(self.ids[index])  # the first answer counts
            if isinstance(value, dict):
                out.append((index, value))  # type: ignore[arg-type]  # the task's own ResultDict
            else:
                sub_id = self.payloads[index]['sub_id']
                out.append((index, internal_error(sub_id, f'task failed: {value!r}')))
        remaining = self._until - asyncio.get_running_loop().time()
        if again and remaining > 0:
            logger.warning('%s: %d tasks failed over a broker fault; publishing them again', self.live_key, len(again))
            await self.publish(sorted(again), remaining)
        return out

    async def _revoke(self, ids: list[str]) -> None:
        try:
            await self.path._in_thread(self.path.app.control.revoke, ids)
        except Exception:  # the tasks still expire at the deadline
            logger.warning('could not revoke %d tasks', len(ids), exc_info=True)

    async def cancel(self, remaining_s: float) -> None:
        """Revoke the request's unfinished tasks (workers drop them when they come up)."""
        await self._revoke(sorted(self.pending))

    async def close(self, drained: bool) -> None:
        """Stored results expire by themselves (``result_expires``); so does the live key."""
        if self._revoke_again is not None:
            self._revoke_again.cancel()
        if self._join is not None:
            self._join.add_done_callback(lambda f: f.cancelled() or f.exception())
        if drained:
            return
        try:
            await self.path.shard.aclient.delete(self.live_key)
        except Exception:
            logger.warning('could not delete %s', self.live_key)
