"""The gateway's dispatcher (`judge.transport.gateway.dispatch.Dispatcher`) over a hand-written path and shard.

The path publishes nothing: its `Waiting` hands out the results a test scripts, take by take, and
records what the dispatcher asks of it (publishes, take timeouts, cancel, close); the shard stands in for
the Redis client (its PINGs and live key are scripted).  What is checked is the dispatcher's own logic:
results in request order, ``queue_timeout`` at the deadline, riding out broker faults (publish again
what is unanswered, give up at the deadline), errors that are not broker faults, the client's
disconnect, and the periodic checks while results stream in.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis

from judge.contracts import RunPayload, Verdict
from judge.results import build_result
from judge.settings import Settings
from judge.transport.gateway import dispatch, outage
from judge.transport.gateway.dispatch import Dispatcher, Outcome
from judge.transport.gateway.lanes import Lane, Lanes
from judge.transport.keys import KeySpace

LANES = Lanes.from_settings(Settings())

Take = list[tuple[int, dict[str, Any]]] | BaseException | float
"""One scripted take: results, an exception to raise, or seconds during which nothing arrives."""


class FakeWaiting:
    """One published request as the test scripts it."""

    live_key = 'live-key'
    settle_s = 0.01

    def __init__(self, script: list[Take], publish_errors: list[BaseException]) -> None:
        self.script = script
        self.publish_errors = publish_errors
        self.published: list[tuple[list[int], float]] = []
        self.timeouts: list[float] = []
        self.cancelled: list[float] = []
        self.closed: list[bool] = []

    async def publish(self, indices: list[int], expires_s: float) -> None:
        self.published.append((indices, expires_s))
        if self.publish_errors:
            raise self.publish_errors.pop(0)

    async def take(self, timeout_s: float, most: int) -> list[tuple[int, dict[str, Any]]]:
        self.timeouts.append(timeout_s)
        step = self.script.pop(0) if self.script else timeout_s  # nothing more: nothing arrives
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, float):
            await asyncio.sleep(min(step, timeout_s))
            return []
        return step

    async def cancel(self, remaining_s: float) -> None:
        self.cancelled.append(remaining_s)

    async def close(self, drained: bool) -> None:
        self.closed.append(drained)


class FakePath:
    """Opens one `FakeWaiting`, whose publishes fail with ``publish_errors`` in turn."""

    name = 'fake'

    def __init__(self, script: list[Take] | None = None, publish_errors: list[BaseException] | None = None) -> None:
        self.waiting = FakeWaiting(script or [], list(publish_errors or []))
        self.opened: list[tuple[list[RunPayload], str, Lane, str]] = []

    def open(self, payloads: list[RunPayload], batch: str, lane: Lane, request_id: str) -> FakeWaiting:
        self.opened.append((payloads, batch, lane, request_id))
        return self.waiting


class FakeRedis:
    """The shard's asyncio client: `expire` answers from ``alive`` (the live key still exists), `ping`
    from ``up`` (the broker answers), `exists` from ``kept`` (Redis kept the live key over an outage)."""

    def __init__(
        self,
        alive: Callable[[int], bool] = lambda n: True,
        up: Callable[[int], bool] = lambda n: True,
        kept: bool = True,
    ) -> None:
        self.alive = alive
        self.up = up
        self.kept = kept
        self.renewed: list[tuple[str, int]] = []
        self.pings = 0

    async def expire(self, key: str, ttl_s: int) -> bool:
        self.renewed.append((key, ttl_s))
        return self.alive(len(self.renewed))

    async def ping(self) -> bool:
        self.pings += 1
        if not self.up(self.pings):
            raise redis.ConnectionError('connection refused')
        return True

    async def exists(self, key: str) -> int:
        return int(self.kept)


class FakeShard:
    """A broker shard without Redis: a name, the real key space and the fake client."""

    def __init__(self, aclient: FakeRedis | None = None) -> None:
        self.name = 's0'
        self.label = 's0 (fake)'
        self.timeout_s = 1.0
        self.keys = KeySpace()
        self.aclient = aclient or FakeRedis()
        self.closed = False

    async def aclose(self) -> None:
        self.closed = True


def payloads(n: int) -> list[RunPayload]:
    return [
        {'sub_id': f's{i}', 'type': 'python', 'solution': f'print({i})', 'input': '', 'expected_output': None}
        for i in range(n)
    ]


def answer(i: int) -> dict[str, Any]:
    """Submission ``i``'s result as a worker sends it."""
    return dict(build_result(f's{i}', Verdict.ACCEPTED, stdout=f'{i}\n'))


def outcome(
    path: FakePath,
    n: int,
    wait_s: float = 5.0,
    shard: FakeShard | None = None,
    disconnected: Callable[[], Awaitable[bool]] | None = None,
) -> tuple[Outcome, float]:
    """Run ``n`` payloads through a dispatcher over ``path``; the outcome and the seconds it took."""

    async def main() -> tuple[Outcome, float]:
        start = time.monotonic()
        out = await Dispatcher(shard or FakeShard(), path).run_outcome(  # type: ignore[arg-type]
            payloads(n), LANES.batch, wait_s, 'batch-1', disconnected
        )
        return out, time.monotonic() - start

    return asyncio.run(main())


@pytest.fixture(autouse=True)
def quick_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Check the client and the live key every 50 ms, and probe a broker that is down every 20 ms."""
    monkeypatch.setattr(dispatch, 'CHECK_EVERY_S', 0.05)
    monkeypatch.setattr(dispatch, '_REPEAT_PAUSE_S', 0.01)
    monkeypatch.setattr(outage, 'PROBE_S', 0.02)


# --- results and deadlines -------------------------------------------------------------------------


def test_results_are_returned_in_request_order_whatever_order_they_arrive_in() -> None:
    path = FakePath([[(2, answer(2))], [(0, answer(0)), (1, answer(1))]])
    out, _ = outcome(path, 3)
    assert [r['stdout'] for r in out.results] == ['0\n', '1\n', '2\n']
    assert (out.lost, out.error) == ([], '')
    assert path.waiting.closed == [True]  # drained: every result was taken
    [(opened, batch, lane, request_id)] = path.opened
    assert [p['sub_id'] for p in opened] == ['s0', 's1', 's2'] and batch == 'batch-1'
    assert lane == LANES.batch and len(request_id) == 32
    [(indices, expires_s)] = path.waiting.published  # one attempt, with every submission
    assert indices == [0, 1, 2] and 4.5 < expires_s <= 5.0


def test_what_misses_the_deadline_is_a_queue_timeout_in_its_place() -> None:
    path = FakePath([[(1, answer(1))]])  # then nothing more arrives
    out, took = outcome(path, 4, wait_s=0.3)
    assert [r['verdict'] for r in out.results] == ['queue_timeout', 'accepted', 'queue_timeout', 'queue_timeout']
    assert [r['sub_id'] for r in out.results] == ['s0', 's1', 's2', 's3']
    assert all(r['reason'] == 'queue_timeout' and r['stdout'] is None for r in out.results[::2])
    assert 0.3 <= out.results[0]['cost'] < 1.0  # the time it waited
    assert 0.3 <= took < 1.0 and (out.lost, out.error) == ([], '')  # not the shard's failure
    assert path.waiting.closed == [False]
    assert all(0 < t <= 0.05 for t in path.waiting.timeouts)  # never waits past a check or the deadline


def test_repeated_and_unknown_indices_are_ignored() -> None:
    first, second = answer(0), dict(answer(0), stdout='again\n')
    path = FakePath([[(0, first), (0, second), (5, answer(5)), (-1, answer(9))], [(1, answer(1))]])
    out, _ = outcome(path, 2)
    assert [r['stdout'] for r in out.results] == ['0\n', '1\n'] and path.waiting.closed == [True]


def test_run_answers_the_results_of_the_outcome() -> None:
    async def main() -> list[Any]:
        path = FakePath([[(0, answer(0))]])
        return await Dispatcher(FakeShard(), path).run(payloads(1), LANES.single, 5.0, 'b')  # type: ignore[arg-type]

    assert [r['stdout'] for r in asyncio.run(main())] == ['0\n']


# --- the shard's failures ----------------------------------------------------------------------------


def test_a_failed_publish_is_published_again_once_the_broker_answers() -> None:
    """The broker refused the publish but answers the PING after it: every submission goes out again."""
    path = FakePath([[(0, answer(0)), (1, answer(1)), (2, answer(2))]], publish_errors=[ConnectionError('refused')])
    out, took = outcome(path, 3, shard=FakeShard(FakeRedis(kept=False)))  # nothing to drain
    assert [r['stdout'] for r in out.results] == ['0\n', '1\n', '2\n']
    assert [indices for indices, _ in path.waiting.published] == [[0, 1, 2], [0, 1, 2]]
    assert (out.lost, out.error) == ([], '') and took < 2.0


def test_after_an_outage_that_kept_the_data_only_the_unanswered_are_published_again() -> None:
    """A fault while waiting: the results that arrived meanwhile are taken, the rest is published again."""
    down_once = FakeRedis(up=lambda n: n > 1, kept=True)  # the first PING fails, the next ones answer
    script: list[Take] = [
        [(0, answer(0))],
        redis.ConnectionError('reset by peer'),
        [(1, answer(1))],
        [],
        [(2, answer(2))],
    ]
    path = FakePath(script)
    out, _ = outcome(path, 3, shard=FakeShard(down_once))
    assert [r['verdict'] for r in out.results] == ['accepted'] * 3
    assert [indices for indices, _ in path.waiting.published] == [[0, 1, 2], [2]]  # 1 came in the drain
    assert (out.lost, out.error) == ([], '') and down_once.pings >= 2


def test_a_redis_that_lost_its_data_gets_everything_unanswered_again_at_once() -> None:
    """The live key is gone (Redis restarted empty) though Redis answers: republish, no waiting."""
    shard = FakeShard(FakeRedis(alive=lambda n: n > 1, kept=False))  # gone at the first check only
    path = FakePath([[(1, answer(1))], 0.1, [(0, answer(0)), (2, answer(2))]])
    out, took = outcome(path, 3, wait_s=30.0, shard=shard)
    assert [r['verdict'] for r in out.results] == ['accepted'] * 3
    assert [indices for indices, _ in path.waiting.published] == [[0, 1, 2], [0, 2]]
    assert took < 5.0 and (out.lost, out.error) == ([], '')


def test_a_broker_that_stays_away_past_the_deadline_fails_the_unanswered() -> None:
    shard = FakeShard(FakeRedis(up=lambda n: False))
    path = FakePath([[(0, answer(0))], redis.ConnectionError('connection refused')])
    out, took = outcome(path, 3, wait_s=0.5, shard=shard)
    assert [r['verdict'] for r in out.results] == ['accepted', 'internal_error', 'internal_error']
    error = out.results[1]['error']
    assert error.startswith('the broker (s0 (fake)) was unreachable for ') and 'connection refused' in error, error
    assert out.error == error and out.lost == []  # nowhere else to run them: not rerouted
    assert 0.4 < took < 2.0
    assert len(path.waiting.published) == 1


def test_a_broker_fault_with_another_shard_up_hands_the_unanswered_to_the_router() -> None:
    async def main(path: FakePath) -> Outcome:
        return await Dispatcher(FakeShard(), path).run_outcome(  # type: ignore[arg-type]
            payloads(3), LANES.batch, 5.0, 'b', None, reroute=lambda: True
        )

    path = FakePath([[(1, answer(1))], redis.TimeoutError('timed out')])
    out = asyncio.run(main(path))
    assert [r['verdict'] for r in out.results] == ['internal_error', 'accepted', 'internal_error']
    assert out.lost == [0, 2] and out.error == 'TimeoutError: timed out'


def test_an_error_that_is_not_a_broker_fault_fails_the_unanswered_without_a_retry() -> None:
    path = FakePath([[(0, answer(0))], ValueError('bad reply')])
    out, _ = outcome(path, 3)
    error = 'lost contact with the queue: ValueError: bad reply'
    assert [r['verdict'] for r in out.results] == ['accepted', 'internal_error', 'internal_error']
    assert (out.lost, out.error) == ([], error) and out.results[2]['error'] == error
    assert path.waiting.closed == [False] and len(path.waiting.published) == 1


def test_the_live_key_is_renewed_at_every_check_while_the_request_waits() -> None:
    client = FakeRedis()
    path = FakePath()
    out, _ = outcome(path, 1, wait_s=0.35, shard=FakeShard(client))
    assert len(client.renewed) >= 3
    assert set(client.renewed) == {(path.waiting.live_key, dispatch.LIVE_TTL_S)}
    assert out.results[0]['verdict'] == 'queue_timeout'


# --- the client -----------------------------------------------------------------------------------------


def test_a_client_that_went_away_cancels_what_has_not_run() -> None:
    asked: list[float] = []

    async def disconnected() -> bool:
        asked.append(time.monotonic())
        return len(asked) >= 2  # gone at the second check

    path = FakePath([[(0, answer(0))]])
    out, took = outcome(path, 3, wait_s=30.0, disconnected=disconnected)
    assert len(asked) == 2 and len(path.waiting.cancelled) == 1
    assert 29.0 < path.waiting.cancelled[0] <= 30.0  # the time left until the deadline
    assert took < 5.0
    assert [r['verdict'] for r in out.results] == ['accepted', 'queue_timeout', 'queue_timeout']
    assert (out.lost, out.error) == ([], '')  # nobody to answer: not the shard's failure


def test_the_checks_go_on_while_results_stream_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long batch is never idle: the client is checked on time even while results keep arriving."""
    monkeypatch.setattr(dispatch, 'CHECK_EVERY_S', 0.2)

    async def gone() -> bool:
        return True

    path = FakePath([[(i, answer(i))] for i in range(200)])  # one more result at every take, at once
    out, took = outcome(path, 200, wait_s=30.0, disconnected=gone)
    arrived = sum(r['verdict'] == 'accepted' for r in out.results)
    assert path.waiting.cancelled and 0 < arrived < 100 and took < 2.0, (arrived, took)


def test_closing_the_dispatcher_closes_its_path_and_its_shard() -> None:
    class ClosingPath(FakePath):
        closed = False

        def close(self) -> None:
            self.closed = True

    async def main(path: FakePath) -> FakeShard:
        shard = FakeShard()
        await Dispatcher(shard, path).aclose()  # type: ignore[arg-type]
        return shard

    path = ClosingPath()
    assert asyncio.run(main(path)).closed and path.closed
    assert asyncio.run(main(FakePath())).closed  # a path without threads has no close()
