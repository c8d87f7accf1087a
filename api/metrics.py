"""Prometheus metrics of the gateway, served at `GET /metrics` (all names start with `judge_`).

Per submission the gateway counts the verdict (by language and route), keeps infrastructure failures
(`queue_timeout`, `internal_error`) apart from wrong answers, and observes two durations:

* `judge_execution_seconds`: the result's `cost` (run time measured by the worker);
* `judge_queue_wait_seconds`: an **estimate** of the time spent outside execution: the request's
  wall time in the gateway minus the submission's `cost`.  It includes publishing, the queue, the
  reply and, for batches, waiting for the batch's slowest sibling, so it is an upper bound.

Queue depth per queue and priority is read from Redis at scrape time (kombu keeps one list per
priority step, see `judge.transport.keys`), so every gateway process reports the same, current value.

Several uvicorn workers: each process keeps its own counters, and a scrape reaches one of them.
Either scrape each process separately, or set ``PROMETHEUS_MULTIPROC_DIR`` to an empty directory
(cleared before the gateway starts) so that every process writes its values there and `/metrics`
aggregates all of them (prometheus_client's multiprocess mode; no process/GC metrics then).
"""

from __future__ import annotations

import logging
import os
from collections import Counter as Tally
from collections.abc import Iterable, Sequence
from typing import Any

from fastapi import APIRouter, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from api.deps import GatewayDep
from judge.contracts import ResultDict, RunPayload

logger = logging.getLogger('api.metrics')

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


class _QueueDepth(Collector):
    """Queue depth per queue and priority, from the last read of Redis (done by the `/metrics` route)."""

    def __init__(self) -> None:
        self.lengths: dict[tuple[str, int], int] | None = None

    def collect(self) -> Iterable[GaugeMetricFamily]:
        up = GaugeMetricFamily('judge_broker_up', 'Whether the gateway could read the queues from Redis')
        up.add_metric([], 0.0 if self.lengths is None else 1.0)
        yield up
        depth = GaugeMetricFamily(
            'judge_queue_depth',
            'Messages waiting per queue and kombu priority list (all in list 0: one list per queue)',
            labels=['queue', 'priority'],
        )
        for (queue, priority), length in sorted((self.lengths or {}).items()):
            depth.add_metric([queue, str(priority)], float(length))
        yield depth


_queue_depth = _QueueDepth()


class _RuntimeInfo(Collector):
    """Each node's submission runtime (from its node info in Redis, read by the `/metrics` route)."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}

    def collect(self) -> Iterable[GaugeMetricFamily]:
        info = GaugeMetricFamily(
            'judge_runtime_info',
            'Submission runtime of each worker node: digest, interpreter and version (value 1)',
            labels=['node', 'digest', 'python', 'python_version', 'managed'],
        )
        packages = GaugeMetricFamily(
            'judge_runtime_package_info',
            "Package versions of each worker node's submission runtime (value 1)",
            labels=['node', 'package', 'version'],
        )
        for node, data in sorted(self.nodes.items()):
            runtime = data.get('runtime') or {}
            labels = [str(runtime.get(k) or '') for k in ('digest', 'python', 'python_version')]
            info.add_metric([node, *labels, str(bool(runtime.get('managed'))).lower()], 1.0)
            for name, version in sorted((runtime.get('packages') or {}).items()):
                packages.add_metric([node, str(name), str(version)], 1.0)
        yield info
        yield packages


_runtime_info = _RuntimeInfo()


def _scrape_registry() -> CollectorRegistry:
    if os.environ.get('PROMETHEUS_MULTIPROC_DIR'):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    else:
        registry = REGISTRY
    registry.register(_queue_depth)
    registry.register(_runtime_info)
    return registry


_registry = _scrape_registry()


def record(route: str, subs: Sequence[RunPayload], results: Sequence[ResultDict], wall_s: float) -> None:
    """Count and time one request's answered submissions."""
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
    for (language, verdict), n in verdicts.items():
        SUBMISSIONS.labels(language, route, verdict).inc(n)
    for reason, n in infra.items():
        INFRA_FAILURES.labels(route, reason).inc(n)


router = APIRouter()


@router.get('/metrics', include_in_schema=False)
async def metrics(gateway: GatewayDep) -> Response:
    """Prometheus text exposition; queue depths are read from Redis now."""
    try:
        _queue_depth.lengths = await gateway.shard.queue_lengths()
    except Exception as exc:
        logger.warning('metrics: broker unreachable: %s', exc)
        _queue_depth.lengths = None
    try:
        _runtime_info.nodes = await gateway.shard.node_infos()
    except Exception as exc:  # the queue depth above already reports the broker's state
        logger.debug('metrics: no node info: %s', exc)
    return Response(generate_latest(_registry), media_type=CONTENT_TYPE_LATEST)
