"""`GET /metrics`: the registry it serves, and what it reads from Redis at that moment (`api.observe.metrics`
holds what the gateway counts per request).

Read at scrape time, so every gateway process reports the same, current value: queue depth per queue
and priority (kombu keeps one list per priority step, see `judge.transport.keys`), summed over the
broker shards, and per shard (`judge_shard_up`, `judge_shard_queue_depth`); the submissions in flight
in all gateway processes together and how many processes are live (`judge.transport.gateway.admission`); each
node's submission runtime (`judge_runtime_info`, `judge_runtime_package_info`) and each worker node's
broker reconnections (`judge_worker_broker_reconnects_total`).

With ``PROMETHEUS_MULTIPROC_DIR`` set, the registry aggregates every gateway process's values
(prometheus_client's multiprocess mode; no process/GC metrics then).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable
from typing import Any

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from api.deps import Gateway, GatewayDep

logger = logging.getLogger('api.observe.scrape')


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
