"""Prometheus metrics of the gateway, served at `GET /metrics` (all names start with `judge_`).

Per submission the gateway counts the verdict (by language and route), keeps infrastructure failures
(`queue_timeout`, `internal_error`) apart from wrong answers, and observes two durations:

* `judge_execution_seconds`: the result's `cost` (run time measured by the worker);
* `judge_queue_wait_seconds`: an **estimate** of the time spent outside execution: the request's
  wall time in the gateway minus the submission's `cost`.  It includes publishing, the queue, the
  reply and, for batches, waiting for the batch's slowest sibling, so it is an upper bound.

Read from Redis at scrape time, so every gateway process reports the same, current value: queue
depth per queue and priority (kombu keeps one list per priority step, see `judge.transport.keys`),
summed over the broker shards, and per shard (`judge_shard_up`, `judge_shard_queue_depth`); the
submissions in flight in all gateway processes together and how many processes are live
(`judge.transport.admission`).

Broker outages (docs/reliability.md): this process's recoveries (`judge_broker_reconnects_total`,
`judge_broker_outage_seconds`) and submissions published again (`judge_republished_submissions_total`),
counted through `OutageMetrics`; each worker node's reconnections, read from Redis at scrape time
(`judge_worker_broker_reconnects_total`).

Several gateway processes (``judge-gateway --workers N``): each process keeps its own counters in
``PROMETHEUS_MULTIPROC_DIR`` (``judge-gateway`` makes and clears one when it is unset; uvicorn run by
hand needs it set to an empty directory), and `/metrics` aggregates every process's values
(prometheus_client's multiprocess mode; no process/GC metrics then).
"""

from __future__ import annotations

import asyncio
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
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from api.deps import Gateway, GatewayDep
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
    """The gateway's `judge.transport.outage.OutageObserver`: counts recoveries and republished submissions."""

    def reconnected(self, shard: str, outage_s: float) -> None:
        BROKER_RECONNECTS.labels(shard).inc()
        BROKER_OUTAGE.labels(shard).observe(outage_s)

    def republished(self, shard: str, n: int) -> None:
        REPUBLISHED.labels(shard).inc(n)


OUTAGES = OutageMetrics()


class _QueueDepth(Collector):
    """Queue depth per queue and priority, per shard, from the last read of Redis (by the `/metrics` route)."""

    def __init__(self) -> None:
        self.shards: dict[str, dict[tuple[str, int], int] | None] = {}
        """Shard name -> its queue lengths, or None when it could not be read."""
        self.in_flight: tuple[int, int] | None = None

    def collect(self) -> Iterable[GaugeMetricFamily]:
        up = GaugeMetricFamily('judge_broker_up', 'Whether the gateway could read the queues of every broker shard')
        up.add_metric([], float(bool(self.shards) and all(v is not None for v in self.shards.values())))
        yield up
        shard_up = GaugeMetricFamily('judge_shard_up', 'Whether the gateway could read this shard', labels=['shard'])
        shard_depth = GaugeMetricFamily(
            'judge_shard_queue_depth', 'Messages waiting per broker shard and queue', labels=['shard', 'queue']
        )
        total: dict[tuple[str, int], int] = {}
        for shard, lengths in sorted(self.shards.items()):
            shard_up.add_metric([shard], float(lengths is not None))
            per_queue: dict[str, int] = {}
            for (queue, priority), length in (lengths or {}).items():
                total[(queue, priority)] = total.get((queue, priority), 0) + length
                per_queue[queue] = per_queue.get(queue, 0) + length
            for queue, length in sorted(per_queue.items()):
                shard_depth.add_metric([shard, queue], float(length))
        depth = GaugeMetricFamily(
            'judge_queue_depth',
            'Messages waiting per queue and kombu priority list, all shards (one list per queue: list 0)',
            labels=['queue', 'priority'],
        )
        for (queue, priority), length in sorted(total.items()):
            depth.add_metric([queue, str(priority)], float(length))
        yield depth
        yield shard_up
        yield shard_depth
        if self.in_flight is not None:
            cluster = GaugeMetricFamily(
                'judge_cluster_in_flight_submissions', 'Submissions in flight in all gateway processes together'
            )
            cluster.add_metric([], float(self.in_flight[0]))
            yield cluster
            processes = GaugeMetricFamily('judge_gateway_processes', 'Live gateway processes sharing the cap')
            processes.add_metric([], float(self.in_flight[1]))
            yield processes


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


class _WorkerReconnects(Collector):
    """Each worker node's broker reconnections, as it recorded them in its shard (read by the `/metrics` route)."""

    def __init__(self) -> None:
        self.nodes: dict[tuple[str, str], dict[str, Any]] = {}

    def collect(self) -> Iterable[CounterMetricFamily]:
        family = CounterMetricFamily(
            'judge_worker_broker_reconnects', 'Broker reconnections of each worker node', labels=['shard', 'node']
        )
        for (shard, node), info in sorted(self.nodes.items()):
            family.add_metric([shard, node], float(info.get('count') or 0))
        yield family


_worker_reconnects = _WorkerReconnects()


def _scrape_registry() -> CollectorRegistry:
    if os.environ.get('PROMETHEUS_MULTIPROC_DIR'):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    else:
        registry = REGISTRY
    registry.register(_queue_depth)
    registry.register(_runtime_info)
    registry.register(_worker_reconnects)
    return registry


_registry = _scrape_registry()


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


router = APIRouter()


async def _lengths(gateway: Gateway) -> None:
    links = gateway.router.links
    reads = await asyncio.gather(*(link.shard.queue_lengths() for link in links), return_exceptions=True)
    _queue_depth.shards = {}
    for link, lengths in zip(links, reads, strict=True):
        if isinstance(lengths, BaseException):
            logger.warning('metrics: broker %s unreachable: %s', link.shard.name, lengths)
            _queue_depth.shards[link.shard.name] = None
        else:
            _queue_depth.shards[link.shard.name] = lengths


@router.get('/metrics', include_in_schema=False)
async def metrics(gateway: GatewayDep) -> Response:
    """Prometheus text exposition; queue depths, node information and the in-flight count are read now."""
    await _lengths(gateway)
    try:
        _queue_depth.in_flight = await gateway.admission.snapshot()
    except Exception as exc:
        logger.debug('metrics: no in-flight count: %s', exc)
        _queue_depth.in_flight = None
    nodes: dict[str, dict[str, Any]] = {}
    reconnects: dict[tuple[str, str], dict[str, Any]] = {}
    for link in gateway.router.links:
        try:
            nodes |= await link.shard.node_infos()
            for node, info in (await link.shard.reconnect_infos()).items():
                reconnects[(link.shard.name, node)] = info
        except Exception as exc:  # the queue depth above already reports the broker's state
            logger.debug('metrics: no node info from %s: %s', link.shard.name, exc)
    _runtime_info.nodes = nodes
    _worker_reconnects.nodes = reconnects
    return Response(generate_latest(_registry), media_type=CONTENT_TYPE_LATEST)
