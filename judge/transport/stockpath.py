"""The stock path on the gateway: Celery's public API only.

Publishing: ``app.send_task`` per job, on one producer, in a thread (it is synchronous).  Waiting:
the worker's task returns its result and Celery stores it in the result backend (the same Redis);
the gateway collects with ``ResultSet.join_native`` in slices, in a thread.  Cancelling:
``app.control.revoke``.  Slower than `judge.transport.fastpath`, but nothing here depends on how
Celery, kombu or redis-py work inside, so an upgrade cannot break it silently.

The threads: Celery's result backend is per thread, so a small dedicated pool (`THREADS`) serves
every request of the process; a request holds one thread only while it publishes or waits for a
slice.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from celery import Celery
from celery.exceptions import TaskRevokedError
from celery.exceptions import TimeoutError as CeleryTimeout
from celery.result import ResultSet

from judge.contracts import RUN_TASK, Job, ResultDict, RunPayload
from judge.results import internal_error
from judge.transport.dispatch import LIVE_TTL_S, argsrepr, make_jobs
from judge.transport.lanes import Lane
from judge.transport.shard import Shard

logger = logging.getLogger('judge.transport.stockpath')

THREADS = 32
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

    async def publish(
        self, payloads: list[RunPayload], batch: str, lane: Lane, expires_s: float, request_id: str
    ) -> StockWaiting:
        """The live key, then one ``send_task`` per job (one Celery group)."""
        live_key = self.shard.keys.live(request_id)
        await self.shard.aclient.set(live_key, 1, ex=LIVE_TTL_S)
        jobs = make_jobs(payloads, None, batch, expires_s)
        ids: list[str] = await self._in_thread(self._send, jobs, lane, expires_s, batch)
        return StockWaiting(self, ids, [p['sub_id'] for p in payloads], live_key)

    def _send(self, jobs: list[Job], lane: Lane, expires_s: float, batch: str) -> list[str]:
        ids: list[str] = []
        with self.app.producer_or_acquire() as producer:
            for job in jobs:
                result = self.app.send_task(
                    RUN_TASK,
                    args=(job,),
                    queue=lane.queue,
                    priority=lane.priority,
                    expires=expires_s,
                    group_id=batch,
                    group_index=job['index'],
                    ignore_result=False,
                    argsrepr=argsrepr(job),
                    kwargsrepr='{}',
                    producer=producer,
                )
                ids.append(result.id)
        return ids


class StockWaiting:
    """One request's tasks in Celery's result backend."""

    def __init__(self, path: StockPath, ids: list[str], sub_ids: list[str], live_key: str) -> None:
        self.path = path
        self.index = {task_id: i for i, task_id in enumerate(ids)}
        self.sub_ids = sub_ids
        self.pending = set(ids)
        self.live_key = live_key

    def _join(self, ids: list[str], timeout_s: float) -> list[tuple[str, Any]]:
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
        return got

    async def take(self, timeout_s: float, most: int) -> list[tuple[int, ResultDict]]:
        """Results that Celery stored within ``timeout_s``."""
        if not self.pending:  # what is left was revoked or expired early (a worker's clock ahead)
            await asyncio.sleep(timeout_s)
            return []
        got = await self.path._in_thread(self._join, list(self.pending), timeout_s)
        out: list[tuple[int, ResultDict]] = []
        for task_id, value in got:
            if task_id not in self.pending:
                continue
            self.pending.discard(task_id)
            index = self.index[task_id]
            if isinstance(value, dict):
                out.append((index, value))  # type: ignore[arg-type]  # the task's own ResultDict
            elif isinstance(value, TaskRevokedError):
                continue  # expired at its deadline: queue_timeout
            else:
                out.append((index, internal_error(self.sub_ids[index], f'task failed: {value!r}')))
        return out

    async def cancel(self, remaining_s: float) -> None:
        """Revoke the request's unfinished tasks (workers drop them when they come up)."""
        try:
            await self.path._in_thread(self.path.app.control.revoke, sorted(self.pending))
        except Exception:  # the tasks still expire at the deadline
            logger.warning('could not revoke %d tasks', len(self.pending), exc_info=True)

    async def close(self, drained: bool) -> None:
        """Stored results expire by themselves (``result_expires``); so does the live key."""
        if drained:
            return
        try:
            await self.path.shard.aclient.delete(self.live_key)
        except Exception:
            logger.warning('could not delete %s', self.live_key)
