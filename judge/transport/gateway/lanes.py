"""Lanes: how one kind of request goes through the judge, its queue, its messages' priority and its
deadline (how long the gateway waits for the results; each task's ``expires``).

The gateway builds its lanes once from the settings (`Lanes.from_settings`) and each submitting route
names its lane (`api.routes.table`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from judge.settings import Settings
from judge.transport.keys import PRIORITY_BATCH, PRIORITY_LONG, PRIORITY_RUN, QUEUE_BATCH, QUEUE_LONG, QUEUE_RUN


@dataclass(frozen=True)
class Lane:
    """Where one kind of route publishes, with which priority, and how long it waits."""

    name: str
    queue: str
    priority: int
    wait_s: float
    """The deadline, seconds: unfinished submissions are answered ``queue_timeout`` then."""


class Lanes(NamedTuple):
    """The gateway's lanes: single outranks batch, which outranks long."""

    single: Lane
    """`/run`, `/judge`: the run queue, the normal deadline."""
    batch: Lane
    """The normal batch routes: the batch queue, the normal deadline."""
    long: Lane
    """The long-batch routes: the long queue, the long-batch deadline."""
    tests: Lane
    """`/judge/tests` and `/judge/tests/batch`: the batch queue and priority, but the longer of the two
    deadlines (a job of many tests cannot finish in one submission's deadline)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> Lanes:
        """The lanes with the deadlines of ``settings`` (`Settings.max_queue_wait_time`, `long_batch_wait_s`)."""
        normal_s, long_s = settings.max_queue_wait_time, settings.long_batch_wait_s
        return cls(
            single=Lane('single', QUEUE_RUN, PRIORITY_RUN, normal_s),
            batch=Lane('batch', QUEUE_BATCH, PRIORITY_BATCH, normal_s),
            long=Lane('long', QUEUE_LONG, PRIORITY_LONG, long_s),
            tests=Lane('tests', QUEUE_BATCH, PRIORITY_BATCH, max(normal_s, long_s)),
        )
