"""``RequestProcessor``: an async micro-batcher in front of the gateway's batch routes.

Callers ``await processor.submit(sub)`` one submission at a time; the processor groups them into
HTTP batches (up to ``max_batch_size``, or what arrived within ``fill_wait_ms`` of the oldest item),
keeps at most ``max_batches_in_flight`` requests open on a keep-alive pool, resends only items that
failed for infrastructure reasons, and answers every caller by its deadline with a ``Result`` or a
``ToolkitError``.  There is no pause after a successful batch.

Tools should use :func:`toolkit.get_shared` (one processor per event loop, URL and policy).
"""

from __future__ import annotations

import asyncio
import collections
import copy
import dataclasses
import logging
import random
from collections.abc import Iterable, Sequence
from typing import Any

from toolkit.client import DEFAULT_BASE_URL, JudgeClient
from toolkit.errors import DeadlineExceeded, ProcessorClosed, RequestRejected, ToolkitError
from toolkit.models import Result, Submission
from toolkit.policy import BatchPolicy, is_retryable
from toolkit.stats import ProcessorStats

__all__ = ['RequestProcessor']

logger = logging.getLogger('toolkit.batcher')


@dataclasses.dataclass(slots=True, eq=False)
class _Item:
    sub: Submission
    future: asyncio.Future[Result]
    created_at: float
    deadline: float
    queued_at: float
    attempts: int = 0
    timer: asyncio.TimerHandle | None = None


class RequestProcessor:
    """Batches submissions to one gateway; see the module docstring.

    :param base_url: gateway URL.
    :param policy: batching/deadline/retry knobs.
    :param client: a ``JudgeClient`` to use (the processor then does not close it).
    :param seed: seed of the jitter's random generator (tests).
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        policy: BatchPolicy | None = None,
        *,
        client: JudgeClient | None = None,
        seed: int | None = None,
    ) -> None:
        self.policy = policy or BatchPolicy()
        self._owns_client = client is None
        self.client = client or JudgeClient(base_url, max_connections=self.policy.max_batches_in_flight + 2)
        self._rng = random.Random(seed)
        self._queue: collections.deque[_Item] = collections.deque()
        self._pending: set[_Item] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._stats = ProcessorStats()
        self._tokens = self.policy.retry.budget_min_tokens
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup, self._idle = asyncio.Event(), asyncio.Event()  # bound to a loop on first use (3.10+)
        self._slots = asyncio.Semaphore(self.policy.max_batches_in_flight)
        self._dispatcher: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def closed(self) -> bool:
        """True once ``close()`` has been called."""
        return self._closing

    def _start(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
            self._dispatcher = loop.create_task(self._dispatch(), name='toolkit-dispatcher')
        elif self._loop is not loop:
            raise RuntimeError('RequestProcessor used from a second event loop; use toolkit.get_shared()')
        return loop

    async def submit(self, sub: Submission, *, deadline_s: float | None = None) -> Result:
        """Queue one submission; return its ``Result`` (an infra one, ``result.infra``, once retries are
        exhausted) or raise a ``ToolkitError`` (``DeadlineExceeded``, ``JudgeUnavailable``, ``RequestRejected``,
        ``ProcessorClosed``...).  Never waits past the deadline (``deadline_s``, default the policy's)."""
        if self._closing:
            raise ProcessorClosed('RequestProcessor is closed')
        loop = self._start()
        now = loop.time()
        item = _Item(sub, loop.create_future(), now, now + (deadline_s or self.policy.deadline_s), now)
        item.timer = loop.call_at(item.deadline, self._expire, item)
        self._pending.add(item)
        self._idle.clear()
        self._tokens = min(self.policy.retry.budget_max_tokens, self._tokens + self.policy.retry.budget_ratio)
        self._stats.submitted += 1
        self._queue.append(item)
        self._wakeup.set()
        try:
            return await item.future
        except asyncio.CancelledError:
            if not item.future.done() or item.future.cancelled():
                self._stats.cancelled += 1
                self._finish(item, None)
            raise

    async def submit_many(
        self, subs: Iterable[Submission], *, deadline_s: float | None = None
    ) -> list[Result | ToolkitError]:
        """Submit several submissions concurrently; errors are returned in place, not raised."""
        outs = await asyncio.gather(*(self.submit(s, deadline_s=deadline_s) for s in subs), return_exceptions=True)
        if bug := next((o for o in outs if isinstance(o, BaseException) and not isinstance(o, ToolkitError)), None):
            raise bug
        return outs  # type: ignore[return-value]

    def stats(self) -> dict[str, Any]:
        """A snapshot of counters (see ``toolkit.stats.ProcessorStats``) plus queue/in-flight sizes."""
        return self._stats.snapshot(queued=len(self._queue), pending=len(self._pending), in_flight=len(self._tasks))

    async def _dispatch(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._slots.acquire()
            batch = await self._collect()
            if not batch:
                self._slots.release()
                return
            task = loop.create_task(self._send(batch))
            self._tasks.add(task)
            task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._slots.release()  # the slot taken by _dispatch for this batch

    async def _collect(self) -> list[_Item]:
        loop = asyncio.get_running_loop()
        while True:
            while self._queue and self._queue[0].future.done():
                self._queue.popleft()  # answered (deadline) or cancelled while waiting
            if self._queue:
                break
            if self._closing:
                return []
            self._wakeup.clear()
            await self._wakeup.wait()
        fill_until = self._queue[0].queued_at + self.policy.fill_wait_ms / 1000
        while len(self._queue) < self.policy.max_batch_size and not self._closing:
            remaining = fill_until - loop.time()
            if remaining <= 0:
                break
            self._wakeup.clear()
            try:
                await asyncio.wait_for(self._wakeup.wait(), remaining)
            except TimeoutError:
                break
        batch: list[_Item] = []
        while self._queue and len(batch) < self.policy.max_batch_size:
            item = self._queue.popleft()
            if not item.future.done():
                batch.append(item)
        return batch

    async def _send(self, batch: list[_Item]) -> None:
        loop = asyncio.get_running_loop()
        live = [it for it in batch if not it.future.done()]
        if not live:
            return
        start = loop.time()
        timeout_s = min(self.policy.request_timeout_s, max(it.deadline for it in live) - start)
        if timeout_s <= 0:
            return  # every deadline timer is about to fire
        for it in live:
            it.attempts += 1
        self._stats.record_batch(len(live))
        try:
            results = await self.client.post_batch(self.policy.route, [it.sub for it in live], timeout_s=timeout_s)
        except ToolkitError as e:
            if isinstance(e, RequestRejected) and len(live) > 1 and e.status in (413, 422):
                self._split(live)  # find the item that is too large or invalid, answer the others
                return
            self._stats.batch_errors += 1
            logger.warning('batch of %d failed: %s', len(live), e)
            for it in live:
                self._retry_or_finish(it, e, e.retry_after_s)
            return
        except Exception as e:  # a bug of ours or aiohttp's: fail the batch clearly, keep the loop alive
            logger.exception('unexpected error while sending a batch')
            err = ToolkitError(f'unexpected client error: {type(e).__name__}: {e}')
            for it in live:
                self._finish(it, err)
            return
        self._stats.record_latency(loop.time() - start)
        for it, res in zip(live, results, strict=True):
            res.batch_size = len(live)
            self._retry_or_finish(it, res, None)  # finishes at once unless res.infra

    def _split(self, items: Sequence[_Item]) -> None:
        """413/422 on a batch: resend it as two halves, so one bad item does not sink the others."""
        self._stats.batch_splits += 1
        mid = len(items) // 2
        for it in items:
            it.attempts -= 1
        for half in (items[:mid], items[mid:]):
            task = asyncio.get_running_loop().create_task(self._send(list(half)))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _retry_or_finish(self, item: _Item, outcome: Result | ToolkitError, retry_after_s: float | None) -> None:
        if item.future.done():
            return
        retry, loop = self.policy.retry, asyncio.get_running_loop()
        delay_s = max(retry.backoff_s(item.attempts, self._rng), retry_after_s or 0.0)
        too_late = loop.time() + delay_s >= item.deadline
        if not is_retryable(outcome) or self._closing or item.attempts >= retry.max_attempts or too_late:
            self._finish(item, outcome)
            return
        if self._tokens < 1:
            self._stats.retries_denied += 1
            self._finish(item, outcome)
            return
        self._tokens -= 1
        self._stats.retries += 1
        loop.call_later(delay_s, self._requeue, item)

    def _requeue(self, item: _Item) -> None:
        if item.future.done():
            return
        if self._closing and self._dispatcher is not None and self._dispatcher.done():
            self._finish(item, ProcessorClosed('RequestProcessor closed before a retry could be sent'))
            return
        item.queued_at = asyncio.get_running_loop().time()
        self._queue.appendleft(item)
        self._wakeup.set()

    def _expire(self, item: _Item) -> None:
        if not item.future.done():
            self._stats.deadline_exceeded += 1
            age_s = asyncio.get_running_loop().time() - item.created_at
            self._finish(item, DeadlineExceeded(f'no answer within {age_s:.1f} s ({item.attempts} attempt(s))'))

    def _finish(self, item: _Item, outcome: Result | ToolkitError | None) -> None:
        """Resolve (or, with ``None``, forget) an item: the single place where futures are completed."""
        if item.timer is not None:
            item.timer.cancel()
        self._pending.discard(item)
        if not self._pending:
            self._idle.set()
        if outcome is None or item.future.done():
            return
        if isinstance(outcome, Result):
            outcome.attempts = item.attempts
            outcome.latency_s = asyncio.get_running_loop().time() - item.created_at
            self._stats.record_result(outcome)
            item.future.set_result(outcome)
        else:
            error = copy.copy(outcome)  # one batch error reaches many callers: each gets its own
            error.attempts = item.attempts
            self._stats.errors += 1
            item.future.set_exception(error)
            item.future.exception()  # mark retrieved: a caller that gave up must not cause a warning

    async def close(self, *, drain_timeout_s: float = 5.0) -> None:
        """Stop accepting work, let queued and in-flight items finish for up to ``drain_timeout_s``,
        then fail whatever is left with ``ProcessorClosed`` and close the HTTP session."""
        if self._closing and self._dispatcher is None:
            return
        self._closing = True
        self._wakeup.set()
        if self._pending and drain_timeout_s > 0:
            try:
                await asyncio.wait_for(self._idle.wait(), drain_timeout_s)
            except TimeoutError:
                logger.warning('close(): %d submission(s) left after %.1f s', len(self._pending), drain_timeout_s)
        tasks = [*self._tasks, *([self._dispatcher] if self._dispatcher else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._dispatcher = None
        for item in list(self._pending):
            self._finish(item, ProcessorClosed('RequestProcessor closed before this submission was answered'))
        self._queue.clear()
        if self._owns_client:
            await self.client.close()

    async def __aenter__(self) -> RequestProcessor:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
