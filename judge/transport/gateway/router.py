"""The gateway over several broker shards: which shard runs what, and what a shard's failure costs.

``JUDGE_BROKER_SHARDS`` names several independent Redis instances; each has its own workers (a
worker instance consumes from one shard, ``JUDGE_WORKER_SHARD``), its own Celery app here and its
own `Dispatcher`.  With one shard the router hands every request to that shard's dispatcher and
adds nothing.  With several:

* **Spreading**: a request smaller than `SPLIT_AT` submissions per shard goes whole to the shard
  with the fewest submissions outstanding from this process (ties in turn); a larger one is cut into
  contiguous parts, one per shard (up to the number of shards that are up), run side by side.
* **A shard that fails** (publishing fails, Redis unreachable, or Redis lost its data) is marked down
  at once and probed every `PROBE_S` until it answers again; no new work goes to it meanwhile.  The
  submissions it held are run once more on another shard that is up, within the request's deadline;
  if none is, its dispatcher rides the outage out as with one shard (`judge.transport.gateway.dispatch`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from celery import Celery

from judge.contracts import ResultDict, RunPayload
from judge.transport.gateway.dispatch import Disconnected, Dispatcher
from judge.transport.gateway.lanes import Lane
from judge.transport.shard import Shard

logger = logging.getLogger('judge.transport.gateway.router')

SPLIT_AT = 64
"""A request is cut into one part per shard only when each part gets at least this many submissions."""
PROBE_S = 1.0
"""How often a shard marked down is probed (PING)."""
_PROBE_TIMEOUT_S = 2.0
_RERUN_MIN_S = 1.0
"""Below this much time left before the deadline, a failed shard's submissions are not run again."""


@dataclass(eq=False)
class ShardLink:
    """One shard as this gateway process uses it: its Celery app, its dispatcher, its health."""

    shard: Shard
    app: Celery
    dispatcher: Dispatcher
    outstanding: int = 0
    """Submissions this process sent to the shard and has not answered yet."""
    up: bool = True
    error: str = ''
    down_since: float = 0.0

    def mark_down(self, error: str) -> None:
        """The shard failed: route around it until a probe succeeds."""
        if self.up:
            logger.error('shard %s is down: %s', self.shard.label, error)
            self.down_since = time.time()
        self.up, self.error = False, error

    def mark_up(self) -> None:
        """The shard answers again."""
        if not self.up:
            logger.warning('shard %s is back after %.1f s', self.shard.label, time.time() - self.down_since)
        self.up, self.error = True, ''


def _once_per_second(disconnected: Disconnected | None) -> Disconnected | None:
    """One client-disconnect check shared by a request's parts (each part asks about once a second)."""
    if disconnected is None:
        return None
    state = {'at': 0.0, 'value': False}
    check: Callable[[], Awaitable[bool]] = disconnected

    async def shared() -> bool:
        now = time.monotonic()
        if not state['value'] and now - state['at'] >= 0.5:
            state['at'] = now
            state['value'] = await check()
        return bool(state['value'])

    return shared


class Router:
    """Runs requests on the shards (see the module docstring)."""

    def __init__(self, links: list[ShardLink]) -> None:
        if not links:
            raise ValueError('a router needs at least one shard')
        self.links = links
        self._turn = 0
        self._prober: asyncio.Task[None] | None = None

    @property
    def path_name(self) -> str:
        """The transport path (the same on every shard)."""
        return self.links[0].dispatcher.path.name

    async def run(
        self,
        payloads: list[RunPayload],
        lane: Lane,
        batch: str,
        disconnected: Disconnected | None = None,
    ) -> list[ResultDict]:
        """Run every payload on the shards within ``lane``'s deadline; results in order (as `Dispatcher.run`)."""
        if len(self.links) == 1:
            return await self.links[0].dispatcher.run(payloads, lane, lane.wait_s, batch, disconnected)
        deadline = asyncio.get_running_loop().time() + lane.wait_s
        n = len(payloads)
        up = sum(link.up for link in self.links) or 1
        links = self.choose(min(up, max(1, n // SPLIT_AT)))
        size, extra = divmod(n, len(links))
        results: list[ResultDict | None] = [None] * n
        check = _once_per_second(disconnected)
        parts, start = [], 0
        for k, link in enumerate(links):
            end = start + size + (k < extra)
            indices = list(range(start, end))
            parts.append(self._run_part(link, indices, payloads, lane, deadline, batch, results, check, rerun=True))
            start = end
        await asyncio.gather(*parts)
        answered: list[ResultDict] = results  # type: ignore[assignment]  # every part filled its indices
        return answered

    def choose(self, k: int, exclude: ShardLink | None = None) -> list[ShardLink]:
        """The ``k`` shards to use now: up first, then the fewest outstanding, ties taken in turn."""
        candidates = [link for link in self.links if link is not exclude]
        self._turn += 1
        count = len(self.links)
        ranked = sorted(
            candidates,
            key=lambda link: (not link.up, link.outstanding, (self.links.index(link) - self._turn) % count),
        )
        return ranked[:k]

    async def _run_part(
        self,
        link: ShardLink,
        indices: list[int],
        payloads: list[RunPayload],
        lane: Lane,
        deadline: float,
        batch: str,
        results: list[ResultDict | None],
        check: Disconnected | None,
        rerun: bool,
    ) -> None:
        remaining = deadline - asyncio.get_running_loop().time()
        link.outstanding += len(indices)
        try:
            outcome = await link.dispatcher.run_outcome(
                [payloads[i] for i in indices],
                lane,
                max(remaining, 0.001),
                batch,
                check,
                reroute=(lambda: self._another_up(link)) if rerun else None,
            )
        finally:
            link.outstanding -= len(indices)
        for j, i in enumerate(indices):
            results[i] = outcome.results[j]
        if not outcome.lost:
            return
        link.mark_down(outcome.error)
        self._start_prober()
        remaining = deadline - asyncio.get_running_loop().time()
        other = self.choose(1, exclude=link)
        if not rerun or not other or not other[0].up or remaining < _RERUN_MIN_S:
            return
        lost = [indices[j] for j in outcome.lost]
        logger.warning(
            'batch=%s: shard %s failed (%s); running its %d submissions on %s',
            batch,
            link.shard.name,
            outcome.error,
            len(lost),
            other[0].shard.name,
        )
        await self._run_part(other[0], lost, payloads, lane, deadline, batch, results, check, rerun=False)

    def _another_up(self, link: ShardLink) -> bool:
        """Whether a shard other than ``link`` is up (then a fault of ``link`` reruns its work there)."""
        return any(other.up for other in self.links if other is not link)

    def _start_prober(self) -> None:
        if self._prober is None or self._prober.done():
            self._prober = asyncio.get_running_loop().create_task(self._probe_down_shards())

    async def _probe_down_shards(self) -> None:
        """PING every shard that is down, every `PROBE_S`, until none is."""
        while any(not link.up for link in self.links):
            await asyncio.sleep(PROBE_S)
            for link in self.links:
                if not link.up:
                    await self.probe(link)

    @staticmethod
    async def probe(link: ShardLink) -> bool:
        """Whether the shard answers a PING now (marks it up or down accordingly)."""
        try:
            await asyncio.wait_for(link.shard.aclient.ping(), _PROBE_TIMEOUT_S)
        except Exception as exc:
            link.mark_down(f'{type(exc).__name__}: {exc}')
            return False
        link.mark_up()
        return True

    async def close(self) -> None:
        """Stop probing; release every dispatcher's threads and clients."""
        if self._prober is not None:
            self._prober.cancel()
        for link in self.links:
            await link.dispatcher.aclose()
