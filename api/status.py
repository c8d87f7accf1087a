"""`/status`: queue depth per queue and priority, live workers (answering now), node details."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING, Any

import redis.asyncio as aioredis

from judge.contracts import NODE_INFO_KEY, QUEUES

if TYPE_CHECKING:
    from api.deps import Gateway

logger = logging.getLogger('api.status')

_INSPECT_TIMEOUT_S = 0.5
_CACHE_S = 1.0
_cache: dict[str, Any] = {'at': 0.0, 'value': None}


_PRIORITIES = range(10)


def _priority_key(queue: str, priority: int) -> str:
    # kombu's Redis transport keeps one list per priority step: `queue` for 0, `queue:N` otherwise
    # (`sep` ':' in celeryconfig.py).  Its `priority_steps` are [0], so all lists but the first stay
    # empty; they are counted anyway, for messages left by releases that used ten steps.
    return f'{queue}:{priority}' if priority else queue


async def queue_lengths(redis: aioredis.Redis) -> dict[tuple[str, int], int]:
    """Messages waiting per (queue, priority), read in one pipelined round trip."""
    pipe = redis.pipeline(transaction=False)
    for queue in QUEUES:
        for priority in _PRIORITIES:
            pipe.llen(_priority_key(queue, priority))
    lengths = await pipe.execute()
    keys = [(queue, priority) for queue in QUEUES for priority in _PRIORITIES]
    return {key: int(n) for key, n in zip(keys, lengths, strict=True)}


def _live_workers(gateway: Gateway) -> dict[str, Any]:
    stats = gateway.celery.control.inspect(timeout=_INSPECT_TIMEOUT_S).stats() or {}
    return {node: s for node, s in stats.items() if isinstance(s, dict)}


async def collect_status(gateway: Gateway) -> dict[str, Any]:
    """Build the `/status` answer; worker liveness is cached for a second."""
    out: dict[str, Any] = {'queue': 0, 'num_workers': 0, 'broker': 'ok'}
    try:
        lengths = await queue_lengths(gateway.redis)
        queues: dict[str, int] = dict.fromkeys(QUEUES, 0)
        for (queue, _), n in lengths.items():
            queues[queue] += n
        out['queues'] = queues
        out['queue'] = sum(queues.values())
        info_raw = await gateway.redis.hgetall(NODE_INFO_KEY)
    except Exception as exc:
        logger.warning('status: broker unreachable: %s', exc)
        out['broker'] = f'unreachable: {type(exc).__name__}'
        return out
    now = time.monotonic()
    if _cache['value'] is None or now - _cache['at'] > _CACHE_S:
        _cache['value'] = await asyncio.to_thread(_live_workers, gateway)
        _cache['at'] = now
    live: dict[str, Any] = _cache['value']
    infos = {k.decode() if isinstance(k, bytes) else k: json.loads(v) for k, v in info_raw.items()}
    nodes = []
    for node, stats in sorted(live.items()):
        processes = len((stats.get('pool') or {}).get('processes') or [])
        host = node.split('@', 1)[-1]
        info = infos.get(node) or infos.get(host) or {}
        nodes.append({'name': node, 'processes': processes, **info})
        out['num_workers'] += processes
    out['nodes'] = nodes
    out['num_nodes'] = len(nodes)
    tiers = sorted({n['tier'] for n in nodes if n.get('tier')})
    out['isolation'] = tiers[0] if len(tiers) == 1 else tiers
    # Nodes whose submission runtimes differ show at a glance: one digest, or the list of them.
    digests = sorted({str((n.get('runtime') or {}).get('digest') or '') for n in nodes} - {''})
    out['runtime'] = digests[0] if len(digests) == 1 else digests
    return out
