"""The batching client (`toolkit.batcher.RequestProcessor`) against the fake gateway: batches, caps, retries,
deadlines, closing and cancelled callers."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.support.toolkit_fakes import FakeGateway, fake_gateway, fast_policy, run
from toolkit import (
    DeadlineExceeded,
    JudgeUnavailable,
    ProcessorClosed,
    RequestProcessor,
    RequestRejected,
    Result,
    Submission,
)
from toolkit.errors import BadResponse


def test_batches_fill_up_and_answers_match_callers() -> None:
    async def main() -> None:
        async with fake_gateway() as gw, RequestProcessor(gw.url, fast_policy(max_batch_size=32)) as proc:
            results = await asyncio.gather(*(proc.submit(Submission(f'code-{i}')) for i in range(100)))
            assert [r.stdout for r in results] == [f'code-{i}' for i in range(100)]
            assert sorted(len(b) for b in gw.batches) == [4, 32, 32, 32]
            assert all(r.attempts == 1 and r.batch_size in (4, 32) for r in results)
            stats = proc.stats()
            assert (stats['submitted'], stats['answered'], stats['batches'], stats['retries']) == (100, 100, 4, 0)

    run(main())


def test_fill_wait_groups_items_arriving_close_together() -> None:
    async def trickle(fill_wait_ms: float) -> list[int]:
        async with fake_gateway() as gw, RequestProcessor(gw.url, fast_policy(fill_wait_ms=fill_wait_ms)) as proc:

            async def later(i: int) -> Result:
                await asyncio.sleep(0.05 * i)
                return await proc.submit(Submission(str(i)))

            await asyncio.gather(*(later(i) for i in range(3)))
            return [len(b) for b in gw.batches]

    assert run(trickle(300.0)) == [3]
    assert run(trickle(0.0)) == [1, 1, 1]


def test_batches_in_flight_are_capped() -> None:
    async def main() -> None:
        policy = fast_policy(max_batch_size=2, max_batches_in_flight=3)
        async with fake_gateway(delay_s=0.1) as gw, RequestProcessor(gw.url, policy) as proc:
            results = await proc.submit_many([Submission(str(i)) for i in range(20)])
            assert all(isinstance(r, Result) and r.ok for r in results)
            assert gw.max_in_flight == 3
            assert len(gw.batches) == 10

    run(main())


def test_no_pause_after_successful_batch() -> None:
    async def main() -> float:
        async with fake_gateway() as gw, RequestProcessor(gw.url, fast_policy(fill_wait_ms=0)) as proc:
            start = time.monotonic()
            for i in range(20):
                assert (await proc.submit(Submission(str(i)))).ok
            return time.monotonic() - start

    assert run(main()) < 2.0  # rStar's client would need >= 20 x 0.5 s


def test_only_infra_failures_are_retried() -> None:
    def mixed(subs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        reasons = {'infra': 'queue_timeout', 'slow': 'worker_timeout'}
        return [FakeGateway.result(s, reasons.get(s['solution'], '')) for s in subs]

    async def main() -> None:
        async with fake_gateway(script=[mixed]) as gw, RequestProcessor(gw.url, fast_policy()) as proc:
            infra, slow, fine = await asyncio.gather(*(proc.submit(Submission(c)) for c in ('infra', 'slow', 'fine')))
            assert (infra.ok, infra.attempts) == (True, 2)
            assert (slow.reason, slow.attempts) == ('worker_timeout', 1)
            assert (fine.ok, fine.attempts) == (True, 1)
            assert [[s['solution'] for s in b] for b in gw.batches] == [['infra', 'slow', 'fine'], ['infra']]

    run(main())


def test_5xx_and_429_are_retried_honouring_retry_after() -> None:
    async def main() -> None:
        script = [('status', 503), ('status', 429, 0.3)]
        async with fake_gateway(script=script) as gw, RequestProcessor(gw.url, fast_policy()) as proc:
            res = await proc.submit(Submission('x'))
            assert (res.ok, res.attempts) == (True, 3)
            assert gw.times[2] - gw.times[1] >= 0.28
            assert proc.stats()['batch_errors'] == 2

    run(main())


def test_rejected_requests_are_not_retried() -> None:
    async def main() -> None:
        async with fake_gateway(script=[('status', 422)]) as gw, RequestProcessor(gw.url, fast_policy()) as proc:
            with pytest.raises(RequestRejected) as info:
                await proc.submit(Submission('x'))
            assert (info.value.status, info.value.attempts, len(gw.batches)) == (422, 1, 1)

    run(main())


def test_too_large_batches_are_split() -> None:
    async def main() -> None:
        async with fake_gateway(max_items=4) as gw, RequestProcessor(gw.url, fast_policy(max_batch_size=16)) as proc:
            results = await asyncio.gather(*(proc.submit(Submission(str(i))) for i in range(16)))
            assert [r.stdout for r in results] == [str(i) for i in range(16)]
            assert proc.stats()['batch_splits'] == 3 and max(len(b) for b in gw.batches) == 16

    run(main())


def test_retries_give_up_with_last_infra_result() -> None:
    async def main() -> None:
        script = ['queue_timeout'] * 10
        async with fake_gateway(script=script) as gw, RequestProcessor(gw.url, fast_policy()) as proc:
            res = await proc.submit(Submission('x'))
            assert (res.reason, res.infra, res.attempts, len(gw.batches)) == ('queue_timeout', True, 4, 4)

    run(main())


def test_retry_budget_limits_retry_storms() -> None:
    async def main() -> None:
        policy = fast_policy(max_batch_size=1, retry={'budget_ratio': 0.0, 'budget_min_tokens': 2})
        async with fake_gateway(script=[('status', 500)] * 100) as gw, RequestProcessor(gw.url, policy) as proc:
            outs = await proc.submit_many([Submission(str(i)) for i in range(10)])
            assert all(isinstance(o, JudgeUnavailable) for o in outs)
            stats = proc.stats()
            assert (stats['retries'], len(gw.batches)) == (2, 12)
            assert stats['retries_denied'] == 10  # 8 first failures, then the 2 retried ones again

    run(main())


def test_deadline_always_answers() -> None:
    async def main() -> None:
        async with fake_gateway(delay_s=5.0) as gw, RequestProcessor(gw.url, fast_policy()) as proc:
            start = time.monotonic()
            with pytest.raises(DeadlineExceeded):
                await proc.submit(Submission('x'), deadline_s=0.3)
            assert 0.25 < time.monotonic() - start < 1.5
            assert proc.stats()['deadline_exceeded'] == 1

    run(main())


def test_unreachable_gateway_gives_clear_error_before_deadline() -> None:
    async def main() -> None:
        async with fake_gateway() as gw:
            url = gw.url  # the port is closed once the server stops
        async with RequestProcessor(url, fast_policy()) as proc:
            start = time.monotonic()
            with pytest.raises(JudgeUnavailable) as info:
                await proc.submit(Submission('x'), deadline_s=5.0)
            assert info.value.attempts == 4 and time.monotonic() - start < 3.0

    run(main())


def test_bad_response_length_is_an_error_not_a_hang() -> None:
    async def main() -> None:
        policy = fast_policy(retry={'max_attempts': 1})
        async with fake_gateway(script=['short']) as gw, RequestProcessor(gw.url, policy) as proc:
            outs = await proc.submit_many([Submission('a'), Submission('b')])
            assert all(isinstance(o, BadResponse) for o in outs)

    run(main())


def test_close_drains_then_fails_leftovers() -> None:
    async def main() -> None:
        async with fake_gateway(delay_s=0.1) as gw:
            proc = RequestProcessor(gw.url, fast_policy())
            task = asyncio.ensure_future(proc.submit(Submission('a')))
            await asyncio.sleep(0.01)
            await proc.close(drain_timeout_s=2.0)
            assert (await task).ok
            with pytest.raises(ProcessorClosed):
                await proc.submit(Submission('b'))
        async with fake_gateway(delay_s=5.0) as gw:
            proc = RequestProcessor(gw.url, fast_policy())
            task = asyncio.ensure_future(proc.submit(Submission('a')))
            await asyncio.sleep(0.05)
            await proc.close(drain_timeout_s=0.1)
            with pytest.raises(ProcessorClosed):
                await task

    run(main())


def test_cancelled_caller_is_removed_from_queue() -> None:
    async def main() -> None:
        policy = fast_policy(max_batch_size=1, max_batches_in_flight=1)
        async with fake_gateway(delay_s=0.2) as gw, RequestProcessor(gw.url, policy) as proc:
            first = asyncio.ensure_future(proc.submit(Submission('first')))
            second = asyncio.ensure_future(proc.submit(Submission('second')))
            await asyncio.sleep(0.05)
            second.cancel()
            assert (await first).ok
            await asyncio.sleep(0.3)
            assert [[s['solution'] for s in b] for b in gw.batches] == [['first']]
            assert proc.stats()['cancelled'] == 1 and proc.stats()['pending'] == 0

    run(main())
