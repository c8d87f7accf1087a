"""`/status`: queue depth per queue, live workers (answering now), node details, the transport path."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from api.deps import Gateway

logger = logging.getLogger('api.status')

_INSPECT_TIMEOUT_S = 0.5
_CACHE_S = 1.0
_cache: dict[str, Any] = {'at': 0.0, 'value': None}


def _live_workers(gateway: Gateway) -> dict[str, Any]:
    stats = gateway.celery.control.inspect(timeout=_INSPECT_TIMEOUT_S).stats() or {}
    return {node: s for node, s in stats.items() if isinstance(s, dict)}


async def collect_status(gateway: Gateway) -> dict[str, Any]:
    """Build the `/status` answer; worker liveness is cached for a second."""
    out: dict[str, Any] = {'queue': 0, 'num_workers': 0, 'broker': 'ok', 'transport': gateway.dispatcher.path.name}
    try:
        lengths = await gateway.shard.queue_lengths()
        queues: dict[str, int] = {}
        for (queue, _), n in lengths.items():
            queues[queue] = queues.get(queue, 0) + n
        out['queues'] = queues
        out['queue'] = sum(queues.values())
        infos = await gateway.shard.node_infos()
        slots = await gateway.shard.slot_infos()
    except Exception as exc:
        logger.warning('status: broker unreachable: %s', exc)
        out['broker'] = f'unreachable: {type(exc).__name__}'
        return out
    now = time.monotonic()
    if _cache['value'] is None or now - _cache['at'] > _CACHE_S:
        _cache['value'] = await asyncio.to_thread(_live_workers, gateway)
        _cache['at'] = now
    live: dict[str, Any] = _cache['value']
    nodes = []
    for node, stats in sorted(live.items()):
        processes = len((stats.get('pool') or {}).get('processes') or [])
        host = node.split('@', 1)[-1]
        info = infos.get(node) or infos.get(host) or {}
        mine = [v for k, v in sorted(slots.items()) if k.rsplit('/', 1)[0] in (node, host)]
        pss_kb = sum(int((s.get('memory') or {}).get('total_pss_kb') or 0) for s in mine)
        nodes.append({'name': node, 'processes': processes, **info, 'slots': mine, 'memory_pss_kb': pss_kb})
        out['num_workers'] += processes
    out['nodes'] = nodes
    out['num_nodes'] = len(nodes)
    tiers = sorted({n['tier'] for n in nodes if n.get('tier')})
    out['isolation'] = tiers[0] if len(tiers) == 1 else tiers
    # Nodes whose submission runtimes differ show at a glance: one digest, or the list of them.
    digests = sorted({str((n.get('runtime') or {}).get('digest') or '') for n in nodes} - {''})
    out['runtime'] = digests[0] if len(digests) == 1 else digests
    return out
