"""Send a request's submissions to the workers and wait for their results, without blocking the loop.

Each request publishes its submissions as one Celery group (a shared ``group_id``, one task per
submission) and waits until every one has answered or its deadline passes.  Unanswered submissions
become ``queue_timeout`` and their tasks expire at the deadline, so nobody runs them for a client
that has gone.  How the messages travel is the path's business (`Path`): `judge.transport.gateway.fastpath`
pushes prebuilt messages and collects results from a reply list, `judge.transport.gateway.stockpath` uses
``send_task`` and Celery's result backend.

Faults, on both paths:

* the client disconnected (checked about once a second): the path cancels the request's tasks that
  have not started yet;
* a broker fault (`judge.transport.gateway.outage.is_broker_fault`): Redis refused, dropped or did not answer
  a command within ``JUDGE_REDIS_TIMEOUT_S``, failed over, or lost its data (the request's live key
  is gone, checked about once a second), or the shard's `judge.transport.gateway.outage.BrokerHealth` saw
  an outage meanwhile.  The gateway still holds every payload: it waits until the broker answers
  again, takes the results that arrived if Redis kept its data, then publishes every unanswered
  submission again as the request's next attempt, whatever the broker kept or lost (a queued
  message, a result, or a message a worker was taking when its connection broke).  The first answer
  of each submission counts, so one judged twice still answers once.  When the deadline (or
  the outage window, ``JUDGE_BROKER_OUTAGE_S``) comes first, the unanswered ones get
  ``internal_error`` saying the broker was unreachable.  With broker shards the router may run them
  on another shard instead (``reroute``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from judge.contracts import ResultDict, RunPayload
from judge.errors import BrokerUnreachable, RedisDataLost
from judge.results import internal_error, queue_timeout
from judge.transport.gateway.lanes import Lane
from judge.transport.gateway.outage import BrokerHealth, describe, is_broker_fault
from judge.transport.gateway.waiting import LIVE_TTL_S, Path, Waiting
from judge.transport.shard import Shard

logger = logging.getLogger('judge.transport.gateway.dispatch')

CHECK_EVERY_S = 1.0
# While more than this many results are outstanding, pause between waits so that each takes several
# results at once: one round trip per result would dominate the gateway's CPU in a long batch.  The
# last results are taken as they come, so a batch never ends later.
_COALESCE_ABOVE = 32
_COALESCE_S = 0.025
MAX_ATTEMPTS = 20
"""Publishes of one request (the first and those after broker faults) before it gives up."""
_REPEAT_PAUSE_S = 0.5
DRAIN_S = 3.0
"""After an outage that kept Redis's data, results are taken for up to this long before the rest is published again."""
_DRAIN_TAKE_S = 0.25

Disconnected = Callable[[], Awaitable[bool]]


@dataclass
class Outcome:
    """One request's results on one shard, and which of them the shard's failure cost."""

    results: list[ResultDict]
    lost: list[int] = field(default_factory=list)
    """Indices answered ``internal_error`` because the shard failed and the router said it would run
    them elsewhere (``reroute``), not because of the program."""
    error: str = ''


class Dispatcher:
    """Runs requests on one shard through one path, riding out the shard's broker faults."""

    def __init__(self, shard: Shard, path: Path, health: BrokerHealth | None = None) -> None:
        self.shard = shard
        self.path = path
        self.health = health or BrokerHealth(shard)

    async def aclose(self) -> None:
        """Stop watching the broker; release the path's threads (a path that holds some has ``close()``)
        and the shard's asyncio client."""
        self.health.close()
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
        (the lane's, or what `judge.transport.gateway.router.Router` has left of it)."""
        return (await self.run_outcome(payloads, lane, wait_s, batch, disconnected)).results

    async def run_outcome(
        self,
        payloads: list[RunPayload],
        lane: Lane,
        wait_s: float,
        batch: str,
        disconnected: Disconnected | None = None,
        reroute: Callable[[], bool] | None = None,
    ) -> Outcome:
        """`run`, telling the shard's failures apart (`Outcome.lost`).

        After a broker fault, ``reroute()`` (the router's: another shard is up) returns the unanswered
        submissions as lost at once; otherwise the dispatcher waits for the broker and publishes them again.
        """
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + wait_s
        waiting = self.path.open(payloads, batch, lane, uuid.uuid4().hex)
        results: list[ResultDict | None] = [None] * len(payloads)
        error, rerouted = '', False
        self.health.enter()
        try:
            error, rerouted = await self._attempts(waiting, results, deadline, batch, disconnected, reroute)
        except Exception as exc:  # not a broker fault: report it, never retry it
            logger.exception('batch=%s: waiting for results on %s failed', batch, self.shard.name)
            error = f'lost contact with the queue: {type(exc).__name__}: {exc}'
        finally:
            self.health.leave()
            await waiting.close(all(r is not None for r in results))
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
        return Outcome(answers, lost if rerouted else [], error)

    async def _attempts(
        self,
        waiting: Waiting,
        results: list[ResultDict | None],
        deadline: float,
        batch: str,
        disconnected: Disconnected | None,
        reroute: Callable[[], bool] | None,
    ) -> tuple[str, bool]:
        """Publish and collect; after each broker fault, wait for the broker and publish the unanswered again.

        Returns the error to answer the unanswered submissions with ('' for none) and whether the
        router runs them elsewhere.
        """
        todo = list(range(len(results)))
        for attempt in range(MAX_ATTEMPTS):
            epoch = self.health.epoch
            try:
                if todo:
                    await self._publish(waiting, todo, deadline)
                    if attempt:
                        self.health.count_republished(len(todo))
                        logger.warning(
                            'batch=%s: published %d unanswered submissions again on %s (attempt %d)',
                            batch,
                            len(todo),
                            self.shard.name,
                            attempt,
                        )
                await self._collect(waiting, results, deadline, disconnected, epoch)
                return '', False
            except Exception as exc:
                if not is_broker_fault(exc):
                    raise
                fault = describe(exc)
            logger.warning('batch=%s: broker fault on %s: %s', batch, self.shard.label, fault)
            if reroute is not None and reroute():
                return fault, True
            if not await self.health.wait_until_back(fault, deadline):
                return self.health.unreachable(), False
            await self._drain(waiting, results, deadline)
            todo = [i for i, r in enumerate(results) if r is None]
            if attempt:  # faults in a row: give the broker (and the workers' bindings) a moment
                await asyncio.sleep(min(_REPEAT_PAUSE_S, max(0.0, deadline - asyncio.get_running_loop().time())))
        return f'the broker ({self.shard.label}) failed {MAX_ATTEMPTS} times in a row: {fault}', False

    async def _drain(self, waiting: Waiting, results: list[ResultDict | None], deadline: float) -> None:
        """After an outage in which Redis kept its data (the live key is there), take the results that
        arrived meanwhile, so that they are not judged again; stops at the first empty take, after
        `DRAIN_S`, or at any error (the republish then covers everything unanswered)."""
        loop = asyncio.get_running_loop()
        until = min(deadline, loop.time() + DRAIN_S)
        try:
            if not await self.shard.aclient.exists(waiting.live_key):
                return  # Redis lost its data: nothing to take
            wait_s = waiting.settle_s
            while (missing := sum(r is None for r in results)) and loop.time() < until:
                got = await waiting.take(min(wait_s, until - loop.time()), missing)
                if not got:
                    return
                wait_s = _DRAIN_TAKE_S
                for index, result in got:
                    if 0 <= index < len(results) and results[index] is None:
                        results[index] = result
        except Exception as exc:
            if not is_broker_fault(exc):
                raise
            logger.info('%s: no results taken after the outage: %s', waiting.live_key, describe(exc))

    async def _publish(self, waiting: Waiting, todo: list[int], deadline: float) -> None:
        """`Waiting.publish`, given up (as a broker fault) when an outage begins or the deadline comes first;
        an abandoned publish finishes in the background and its copies are superseded by the next attempt's."""
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            raise BrokerUnreachable('the deadline passed before the submissions could be published')
        task = asyncio.ensure_future(waiting.publish(todo, remaining))
        down = asyncio.ensure_future(self.health.went_down())
        try:
            done, _ = await asyncio.wait({task, down}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        finally:
            down.cancel()
        if task in done:
            task.result()
            return
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        raise BrokerUnreachable(self.health.error or f'publishing took longer than the {remaining:.1f} s left')

    async def _collect(
        self,
        waiting: Waiting,
        results: list[ResultDict | None],
        deadline: float,
        disconnected: Disconnected | None,
        epoch: int,
    ) -> None:
        """Fill ``results`` until complete, the deadline, or the client leaves; a broker fault, or an
        outage the shard's health saw since ``epoch``, raises."""
        loop = asyncio.get_running_loop()
        missing = sum(r is None for r in results)
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
                    logger.info('request %s: client went away; cancelled %d submissions', waiting.live_key, missing)
                    return
                if self.health.changed_since(epoch):
                    raise BrokerUnreachable(self.health.error or f'the broker was away: {self.health.last_error}')
                if not await self.shard.aclient.expire(waiting.live_key, LIVE_TTL_S):  # renewed, if still there
                    raise RedisDataLost(waiting.live_key)
            for index, result in await waiting.take(min(remaining, CHECK_EVERY_S), missing):
                if 0 <= index < len(results) and results[index] is None:
                    results[index] = result
                    missing -= 1
            if missing > _COALESCE_ABOVE:
                await asyncio.sleep(min(_COALESCE_S, max(0.0, deadline - loop.time())))
