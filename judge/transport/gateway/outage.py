"""The gateway's view of one broker: which errors are broker faults, noticing an outage, and waiting
until the broker answers again.

A request that meets a broker fault (`is_broker_fault`: Redis refused, reset or timed out a
command, is loading, is a read-only replica after a failover, or lost the request's keys) asks its
shard's `BrokerHealth` to `wait_until_back`.  One prober per shard and process PINGs the Redis every
`PROBE_S` until it answers; every request waiting on it resumes then (and publishes again what it
has not had answered, `judge.transport.gateway.dispatch`).  The wait ends early, with ``False``, when the
request's deadline or the outage window (``JUDGE_BROKER_OUTAGE_S``, counted from the first fault
this process saw) comes first.

A request's own commands may not notice an outage (a publish or a wait that only takes longer), so
while requests are in flight a watcher also PINGs the broker every `WATCH_S`, with the Redis timeout:
one that goes unanswered starts an outage too.  Each outage ridden out advances `BrokerHealth.epoch`;
a request that published under an earlier epoch treats the outage as its own fault.

`BrokerHealth` also keeps what `/status` shows (state, outages, the last one's length, submissions
published again) and tells an `OutageObserver` (the gateway's Prometheus counters) about each
recovery and each republish.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Protocol

import redis
from kombu.exceptions import InconsistencyError, OperationalError

from judge.errors import TransportError
from judge.transport.shard import Shard

logger = logging.getLogger('judge.transport.gateway.outage')

PROBE_S = 0.25
"""How often a broker that is down is PINGed."""
PROBE_TIMEOUT_S = 1.0
"""A PING unanswered after this long counts as a failed probe (a paused Redis)."""
WATCH_S = 1.0
"""While requests are in flight, the broker is PINGed this often (an unanswered PING starts an outage)."""

BROKER_FAULTS: tuple[type[BaseException], ...] = (
    redis.ConnectionError,  # refused, reset, "LOADING", no master known to the Sentinels yet
    redis.TimeoutError,  # paused or partitioned past JUDGE_REDIS_TIMEOUT_S
    redis.ReadOnlyError,  # a demoted master after a failover
    OSError,
    TimeoutError,
    OperationalError,  # kombu: publishing failed after its retries
    InconsistencyError,  # kombu: the queue bindings are gone (Redis restarted empty)
    TransportError,  # ours: RedisDataLost, BrokerUnreachable
)


def is_broker_fault(exc: BaseException) -> bool:
    """Whether ``exc`` says the broker is away or lost data (as opposed to a bug)."""
    return isinstance(exc, BROKER_FAULTS)


def describe(exc: BaseException) -> str:
    """``Type: message`` of an exception, for logs and results."""
    text = str(exc)
    return f'{type(exc).__name__}: {text}' if text else type(exc).__name__


class OutageObserver(Protocol):
    """Told about recoveries and republished submissions (the gateway's metrics)."""

    def reconnected(self, shard: str, outage_s: float) -> None:
        """Shard ``shard`` answers again after ``outage_s`` seconds."""

    def republished(self, shard: str, n: int) -> None:
        """``n`` submissions were published again on ``shard``."""


class BrokerHealth:
    """One shard's broker as this gateway process sees it (see the module docstring)."""

    def __init__(self, shard: Shard, outage_s: float = 60.0, observer: OutageObserver | None = None) -> None:
        self.shard = shard
        self.outage_s = outage_s
        self.observer = observer
        self.error = ''
        """What the current outage looks like (empty while the broker answers)."""
        self.last_error = ''
        """What the last outage looked like."""
        self.down_since: float | None = None
        """Epoch seconds of the first fault of the current outage; None while the broker answers."""
        self.outages = 0
        self.last_outage_s: float | None = None
        self.recovered_at: float | None = None
        self.republished = 0
        self.epoch = 0
        """Outages ridden out so far (see the module docstring)."""
        self.active = 0
        """Requests in flight (`enter`, `leave`): while there are any, the broker is watched."""
        self._down_at = 0.0  # the same instant on the loop's clock
        self._back: asyncio.Event | None = None
        self._down = asyncio.Event()
        self._prober: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None

    @property
    def up(self) -> bool:
        """Whether no outage is under way."""
        return self.down_since is None

    def enter(self) -> None:
        """A request starts: the broker is watched while any request is in flight."""
        self.active += 1
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    def leave(self) -> None:
        """A request has its answers."""
        self.active -= 1

    def changed_since(self, epoch: int) -> bool:
        """Whether an outage is under way, or one ended, since `epoch` was read."""
        return not self.up or self.epoch != epoch

    async def went_down(self) -> None:
        """Return once an outage is under way."""
        await self._down.wait()

    def down_for_s(self) -> float:
        """Seconds since the current outage began (0 when there is none)."""
        return 0.0 if self.down_since is None else asyncio.get_running_loop().time() - self._down_at

    def unreachable(self) -> str:
        """What a submission that waited out the outage in vain is told."""
        return f'the broker ({self.shard.label}) was unreachable for {self.down_for_s():.1f} s: {self.error}'

    async def wait_until_back(self, error: str, deadline: float) -> bool:
        """After a fault described by ``error``: wait until the broker answers again.

        ``deadline`` is on the loop's clock.  True at once when a PING answers right away (the fault
        was data loss, not an outage); False when the deadline or the outage window comes first.
        """
        loop = asyncio.get_running_loop()
        if self.up and await self._ping():
            return True
        self._mark_down(error)
        event = self._back
        until = min(deadline, self._down_at + self.outage_s)
        if event is None or event.is_set():
            return True
        try:
            await asyncio.wait_for(event.wait(), max(0.0, until - loop.time()))
        except TimeoutError:
            return event.is_set()
        return True

    def close(self) -> None:
        """Stop probing and watching (the gateway process stops)."""
        for task in (self._prober, self._watcher):
            if task is not None:
                task.cancel()

    def count_republished(self, n: int) -> None:
        """``n`` submissions were published again after a fault."""
        self.republished += n
        if self.observer is not None:
            self.observer.republished(self.shard.name, n)

    def describe(self) -> dict[str, Any]:
        """This process's view, for `/status`."""
        out: dict[str, Any] = {
            'state': 'ok' if self.up else 'unreachable',
            'outages': self.outages,
            'last_outage_s': None if self.last_outage_s is None else round(self.last_outage_s, 3),
            'recovered_at': self.recovered_at,
            'republished': self.republished,
        }
        if not self.up:
            out |= {'down_since': self.down_since, 'down_for_s': round(self.down_for_s(), 3), 'error': self.error}
        return out

    async def _ping(self) -> bool:
        try:
            await asyncio.wait_for(self.shard.aclient.ping(), PROBE_TIMEOUT_S)
        except Exception as exc:
            self.error = describe(exc)
            return False
        return True

    async def _watch(self) -> None:
        """PING every `WATCH_S`, with the Redis timeout, while requests are in flight and no outage is known."""
        while self.active > 0:
            await asyncio.sleep(WATCH_S)
            if not self.up or self.active <= 0:
                continue
            try:
                await asyncio.wait_for(self.shard.aclient.ping(), self.shard.timeout_s)
            except Exception as exc:
                if self.up:
                    self._mark_down(f'no answer to a PING: {describe(exc)}')

    def _mark_down(self, error: str) -> None:
        if self.down_since is None:
            self.error = error
            self.down_since = time.time()
            self._down_at = asyncio.get_running_loop().time()
            self._back = asyncio.Event()
            self._down.set()
            logger.error('broker %s unreachable: %s', self.shard.label, error)
        if self._prober is None or self._prober.done():
            self._prober = asyncio.get_running_loop().create_task(self._probe())

    async def _probe(self) -> None:
        """PING every `PROBE_S` until the broker answers, then wake every waiting request."""
        while self.down_since is not None:
            if await self._ping():
                self._recovered()
                return
            await asyncio.sleep(PROBE_S)

    def _recovered(self) -> None:
        outage_s = self.down_for_s()
        self.outages += 1
        self.last_outage_s = outage_s
        self.recovered_at = time.time()
        self.down_since = None
        self.last_error, self.error = self.error, ''
        self.epoch += 1
        self._down = asyncio.Event()
        if self._back is not None:
            self._back.set()
        logger.warning('broker %s is back after %.1f s', self.shard.label, outage_s)
        if self.observer is not None:
            self.observer.reconnected(self.shard.name, outage_s)
