"""Load for the broker-fault tests: one long batch and single `/run` calls in flight, over real HTTP.

`Load` sends a long batch of small Python submissions (each prints ``i * i``) and, beside it, keeps
`RUNNERS` threads sending `/run` one after the other until told to stop; `Load.report` checks every
answer: each submission answered once, in its place, right, and never as a failure of the program.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from tests.support.helpers import request

RUNNERS = 2
"""Threads that send `/run` calls one after the other."""
PAUSE_S = 0.1
"""Between two `/run` calls of one thread, so that the batch (on a lower-priority queue) gets the workers too."""


def submission(i: int, tag: str) -> dict[str, Any]:
    """A submission printing ``i * i``, with a sub_id naming it."""
    return {'sub_id': f'{tag}-{i}-{uuid.uuid4().hex[:6]}', 'type': 'python', 'solution': f'print({i} * {i})'}


def wrong(result: dict[str, Any], i: int, sub_id: str) -> str:
    """Why ``result`` is not the right answer of submission ``i`` (empty when it is)."""
    if result.get('sub_id') != sub_id:
        return f'sub_id {result.get("sub_id")!r} instead of {sub_id!r}'
    if not result.get('success') or result.get('reason') or (result.get('stdout') or '').strip() != str(i * i):
        return (
            f'{result.get("verdict")} {result.get("reason")!r} {result.get("error")!r} stdout={result.get("stdout")!r}'
        )
    return ''


@dataclass
class RunCall:
    """One `/run` and its answer."""

    i: int
    sub_id: str
    sent_at: float
    answered_at: float = 0.0
    status: int = 0
    result: Any = None


@dataclass
class Report:
    """What the load got back."""

    batch_s: float
    problems: list[str]
    runs: list[RunCall]
    batch_reasons: dict[str, int] = field(default_factory=dict)

    def first_answer_after(self, at: float) -> float:
        """Seconds from ``at`` to the first `/run` answered right after it."""
        times = [c.answered_at for c in self.runs if c.answered_at >= at and c.status == 200]
        return min(times) - at if times else float('inf')

    def in_flight_at(self, at: float) -> int:
        """`/run` calls sent before ``at`` and answered after it."""
        return sum(1 for c in self.runs if c.sent_at <= at <= c.answered_at)


class Load:
    """A long batch of ``n`` submissions plus single `/run` calls, against the gateway at ``url``."""

    def __init__(self, url: str, n: int, timeout_s: float = 240.0) -> None:
        self.url = url
        self.subs = [submission(i, 'batch') for i in range(n)]
        self.timeout_s = timeout_s
        self.runs: list[RunCall] = []
        self._stop = threading.Event()
        self._batch: tuple[int, Any] | None = None
        self._batch_s = 0.0
        self._threads = [threading.Thread(target=self._send_batch, daemon=True)]
        self._threads += [threading.Thread(target=self._send_runs, args=(k,), daemon=True) for k in range(RUNNERS)]
        self._lock = threading.Lock()

    def start(self) -> Load:
        for t in self._threads:
            t.start()
        return self

    def _send_batch(self) -> None:
        t0 = time.monotonic()
        self._batch = request(self.url + '/run/long-batch', {'submissions': self.subs}, timeout_s=self.timeout_s)
        self._batch_s = time.monotonic() - t0

    def _send_runs(self, k: int) -> None:
        i = 1000 * (k + 1)
        while not self._stop.is_set():
            sub = submission(i, f'run{k}')
            call = RunCall(i, sub['sub_id'], time.monotonic())
            with self._lock:
                self.runs.append(call)
            try:
                call.status, call.result = request(self.url + '/run', sub, timeout_s=self.timeout_s)
            except Exception as exc:  # reported by `report`
                call.result = f'{type(exc).__name__}: {exc}'
            call.answered_at = time.monotonic()
            i += 1
            self._stop.wait(PAUSE_S)

    def batch_done(self) -> bool:
        return self._batch is not None

    def report(self) -> Report:
        """Stop the `/run` senders, wait for everything, and list every answer that is not right."""
        self._threads[0].join(self.timeout_s)
        self._stop.set()
        for t in self._threads[1:]:
            t.join(self.timeout_s)
        problems: list[str] = []
        reasons: dict[str, int] = {}
        if self._batch is None:
            problems.append('the batch got no answer')
        else:
            status, body = self._batch
            results = body.get('results') if status == 200 and isinstance(body, dict) else None
            if results is None or len(results) != len(self.subs):
                problems.append(f'batch: HTTP {status}, {len(results or [])} results for {len(self.subs)}')
            for i, (sub, res) in enumerate(zip(self.subs, results or [], strict=False)):
                reason = res.get('verdict') or res.get('reason') or ''
                reasons[reason] = reasons.get(reason, 0) + 1
                why = wrong(res, i, sub['sub_id'])
                if why:
                    problems.append(f'batch[{i}]: {why}')
        for call in self.runs:
            why = (
                f'HTTP {call.status} {call.result!r:.300}'
                if call.status != 200
                else wrong(call.result, call.i, call.sub_id)
            )
            if why:
                problems.append(f'/run {call.sub_id}: {why}')
        return Report(self._batch_s, problems, list(self.runs), reasons)
