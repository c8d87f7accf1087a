"""Lanes carry their queue, priority and deadline."""

from __future__ import annotations

from judge.settings import Settings
from judge.transport import keys
from judge.transport.lanes import Lane, Lanes


def test_the_lanes_of_the_default_settings() -> None:
    lanes = Lanes.from_settings(Settings())
    assert lanes == Lanes(
        single=Lane('single', 'judge.run', 1, 19.0),
        batch=Lane('batch', 'judge.batch', 4, 19.0),
        long=Lane('long', 'judge.long', 7, 3615.0),
        tests=Lane('tests', 'judge.batch', 4, 3615.0),
    )
    short = Lanes.from_settings(Settings(long_batch_max_queue_wait_time=3))
    assert (short.long.wait_s, short.tests.wait_s) == (3, 19), 'tests wait the longer of the two deadlines'
    assert not hasattr(keys, 'LANES') and not hasattr(keys, 'Lane')
