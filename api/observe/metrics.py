"""Prometheus metrics the gateway counts per request (all names start with `judge_`), served with what
is read from Redis at scrape time by `GET /metrics` (`api.observe.scrape`).

Per submission the gateway counts the verdict (by language and route), keeps infrastructure failures
(`queue_timeout`, `internal_error`) apart from wrong answers, and observes two durations:

* `judge_execution_seconds`: the result's `cost` (run time measured by the worker);
* `judge_queue_wait_seconds`: an **estimate** of the time spent outside execution: the request's
  wall time in the gateway minus the submission's `cost`.  It includes publishing, the queue, the
  reply and, for batches, waiting for the batch's slowest sibling, so it is an upper bound.

Broker outages (docs/reliability.md): this process's recoveries (`judge_broker_reconnects_total`,
`judge_broker_outage_seconds`) and submissions published again (`judge_republished_submissions_total`),
counted through `OutageMetrics`.

Several gateway processes (``judge-gateway --workers N``): each process keeps its own counters in
``PROMETHEUS_MULTIPROC_DIR`` (``judge-gateway`` makes and clears one when it is unset; uvicorn run by
hand needs it set to an empty directory), and `/metrics` aggregates every process's values
(prometheus_client's multiprocess mode; no process/GC metrics then).
"""

from __future__ import annotations

import os
from collections import Counter as Tally
from collections.abc import Sequence

from prometheus_client import Counter, Gauge, Histogram

from judge.contracts import ResultDict, RunPayload

INFRA_REASONS = frozenset({'queue_timeout', 'internal_error'})

_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0)
_WAIT_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)

SUBMISSIONS = Counter(
    'judge_submissions', 'Judged submissions by language, route and verdict', ['language', 'route', 'verdict']
)
INFRA_FAILURES = Counter(
    'judge_infra_failures', 'Submissions lost to the infrastructure (not the program)', ['route', 'reason']
)
EXECUTION = Histogram(
    'judge_execution_seconds', 'Execution time of a submission (its cost)', ['language'], buckets=_SECONDS
)
QUEUE_WAIT = Histogram(
    'judge_queue_wait_seconds',
    'Estimated wait outside execution: request wall time minus cost (an upper bound for batches)',
    ['route'],
    buckets=_WAIT_SECONDS,
)
BATCH_SIZE = Histogram('judge_batch_size', 'Submissions per request', ['route'], buckets=_SIZES)
IN_FLIGHT = Gauge(
    'judge_in_flight_submissions', 'Submissions accepted and not answered yet', multiprocess_mode='livesum'
)
REJECTED = Counter('judge_rejected_requests', 'Requests refused before enqueueing anything', ['reason'])
DOOR_SUBMISSIONS = Counter(
    'judge_door_submissions',
    'Submissions that came through a compatible door (SandboxFusion, Piston, Judge0), by verdict',
    ['door', 'verdict'],
)
REPUBLISHED = Counter(
    'judge_republished_submissions',
    'Submissions published again after a broker fault (restart, failover, outage)',
    ['shard'],
)
BROKER_RECONNECTS = Counter('judge_broker_reconnects', 'Broker outages this gateway rode out, by shard', ['shard'])
BROKER_OUTAGE = Histogram(
    'judge_broker_outage_seconds', 'Length of the broker outages the gateway rode out', ['shard'], buckets=_SECONDS
)


class OutageMetrics:
    """The gateway's `judge.transport.gateway.outage.OutageObserver`: counts recoveries and republished submissions."""

    def reconnected(self, shard: str, outage_s: float) -> None:
        BROKER_RECONNECTS.labels(shard).inc()
        BROKER_OUTAGE.labels(shard).observe(outage_s)

    def republished(self, shard: str, n: int) -> None:
        REPUBLISHED.labels(shard).inc(n)


OUTAGES = OutageMetrics()


def record(
    route: str, subs: Sequence[RunPayload], results: Sequence[ResultDict], wall_s: float, door: str = ''
) -> None:
    """Count and time one request's answered submissions (``door``: the compatible API they came through)."""
    BATCH_SIZE.labels(route).observe(len(subs))
    verdicts: Tally[tuple[str, str]] = Tally()
    infra: Tally[str] = Tally()
    wait = QUEUE_WAIT.labels(route)
    execution: dict[str, Histogram] = {}
    for sub, result in zip(subs, results, strict=True):
        language = sub['type']
        reason = result.get('reason') or ''
        verdicts[(language, result.get('verdict') or reason or 'unknown')] += 1
        if reason in INFRA_REASONS:
            infra[reason] += 1
            continue
        cost = float(result.get('cost') or 0.0)
        hist = execution.get(language)
        if hist is None:
            hist = execution[language] = EXECUTION.labels(language)
        hist.observe(cost)
        wait.observe(max(0.0, wall_s - cost))
    by_verdict: Tally[str] = Tally()
    for (language, verdict), n in verdicts.items():
        SUBMISSIONS.labels(language, route, verdict).inc(n)
        by_verdict[verdict] += n
    if door:
        for verdict, n in by_verdict.items():
            DOOR_SUBMISSIONS.labels(door, verdict).inc(n)
    for reason, n in infra.items():
        INFRA_FAILURES.labels(route, reason).inc(n)


def process_exit() -> None:
    """This gateway process stops: drop its live gauges from the multiprocess directory."""
    if os.environ.get('PROMETHEUS_MULTIPROC_DIR'):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]
