"""`/status`: queue depth per queue and priority, live workers (answering now), node details."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING, Any

from judge.contracts import NODE_INFO_KEY, QUEUES

if TYPE_CHECKING:
    from api.deps import Gateway

logger = logging.getLogger('api.status')

_INSPECT_TIMEOUT_S = 0.5
_CACHE_S = 1.0
_cache: dict[str, Any] = {'at': 0.0, 'value': None}


def _priority_keys(queue: str) -> list[str]:
    # kombu's Redis transport keeps one list per priority step: `queue` for 0, `queue:N` otherwise.
    return [queue] + [f'{queue}:{p}' for p in range(1, 10)]


def _live_workers(gateway: Gateway) -> dict[str, Any]:
    stats = gateway.celery.control.inspect(timeout=_INSPECT_TIMEOUT_S).stats() or {}
    return {node: s for node, s in stats.items() if isinstance(s, dict)}


async def collect_status(gateway: Gateway) -> dict[str, Any]:
    """Build the `/status` answer; worker liveness is cached for a second."""
    out: dict[str, Any] = {'queue': 0, 'num_workers': 0, 'broker': 'ok'}
    try:
        pipe = gateway.redis.pipeline(transaction=False)
        for queue in QUEUES:
            for key in _priority_keys(queue):
                pipe.llen(key)
        lengths = await pipe.execute()
        queues: dict[str, int] = {}
        for i, queue in enumerate(QUEUES):
            queues[queue] = sum(lengths[i * 10 : (i + 1) * 10])
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
    return out
