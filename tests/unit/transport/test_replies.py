"""The workers' cancel check (`judge.transport.worker.replies.CancelWatch`): a set lookup, Redis read once a period."""

from __future__ import annotations

import time
from typing import Any


def test_cancel_check_costs_one_redis_read_per_poll_period() -> None:
    """The per-task check is a set lookup; Redis is read at most once per 0.25 s per process."""
    from judge.transport.keys import KeySpace
    from judge.transport.worker.replies import CancelWatch

    reads: list[tuple[Any, ...]] = []
    keys = KeySpace()

    class FakeRedis:
        def zrangebyscore(self, *args: Any) -> list[bytes]:
            reads.append(args)
            return [keys.reply('gone').encode()]

    class FakeShard:
        client = FakeRedis()

    FakeShard.keys = keys  # type: ignore[attr-defined]
    watch = CancelWatch(FakeShard())  # type: ignore[arg-type]

    def job(request_id: str | None) -> Any:
        return {'sub': {}, 'reply_to': keys.reply(request_id) if request_id else None, 'index': 0, 'batch': ''}

    gone, here, stock = job('gone'), job('here'), job(None)
    t0 = time.process_time()
    answers = [watch.is_cancelled(gone if i % 2 else here) for i in range(20_000)]
    per_call_us = (time.process_time() - t0) / 20_000 * 1e6
    assert answers[:4] == [False, True, False, True]
    assert len(reads) <= 2 and reads[0][0] == keys.cancelled  # the loop takes far less than 0.5 s
    assert per_call_us < 10, per_call_us  # a set lookup
    assert not watch.is_cancelled(stock)  # the stock path cancels with revoke, never through the ZSET
