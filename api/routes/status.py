"""`/status`: queue depth per queue, live workers (answering now), node details (with their broker
reconnections), the transport path, the in-flight count of all gateway processes, this process's
view of broker outages (``broker_outage``); with several broker shards, the sum over them and each
shard's own line."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from api.deps import Gateway
    from judge.transport.gateway.router import ShardLink

logger = logging.getLogger('api.routes.status')

_INSPECT_TIMEOUT_S = 0.5
_CACHE_S = 1.0
_GRACE_S = 10.0
"""A node that answered a poll this recently stays listed: a busy worker can miss one short poll."""
_cache: dict[str, tuple[float, dict[str, Any]]] = {}
_last_seen: dict[str, dict[str, tuple[float, dict[str, Any]]]] = {}


def _live_workers(link: ShardLink) -> dict[str, Any]:
    stats = link.app.control.inspect(timeout=_INSPECT_TIMEOUT_S).stats() or {}
    return {node: s for node, s in stats.items() if isinstance(s, dict)}


async def _cached_live_workers(link: ShardLink) -> dict[str, Any]:
    """The shard's live workers (Celery's ``inspect stats``), asked at most once a second."""
    now = time.monotonic()
    hit = _cache.get(link.shard.name)
    if hit is None or now - hit[0] > _CACHE_S:
        try:
            answered = await asyncio.to_thread(_live_workers, link)
        except Exception as exc:  # e.g. the first broadcast after a Redis restart: ask again next time
            logger.warning('status: could not ask the workers of %s: %s', link.shard.name, exc)
            answered = {}
        hit = (now, _with_recent(link.shard.name, answered, now))
        _cache[link.shard.name] = hit
    return hit[1]


def _with_recent(shard: str, answered: dict[str, Any], now: float) -> dict[str, Any]:
    """``answered`` plus the nodes of ``shard`` that answered within `_GRACE_S` (with their last stats)."""
    seen = _last_seen.setdefault(shard, {})
    seen.update({node: (now, stats) for node, stats in answered.items()})
    for node in [n for n, (at, _) in seen.items() if now - at > _GRACE_S]:
        del seen[node]
    return {node: stats for node, (_, stats) in seen.items()}


async def _read_shard(link: ShardLink) -> tuple[dict[str, int], dict[str, dict[str, Any]]]:
    lengths = await link.shard.queue_lengths()
    queues: dict[str, int] = {}
    for (queue, _), n in lengths.items():
        queues[queue] = queues.get(queue, 0) + n
    infos = _with_slots(await link.shard.node_infos(), await link.shard.slot_infos())
    for node, reconnects in (await link.shard.reconnect_infos()).items():
        infos.setdefault(node, {})['broker_reconnects'] = reconnects
    return queues, infos


def _with_slots(infos: dict[str, dict[str, Any]], slots: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each node's information plus its sandbox slots (keyed ``<node>/<slot>``) and their PSS in all."""
    out = {name: dict(info) for name, info in infos.items()}
    for key, slot in sorted(slots.items()):
        entry = out.setdefault(key.rsplit('/', 1)[0], {})
        entry.setdefault('slots', []).append(slot)
        pss_kb = int((slot.get('memory') or {}).get('total_pss_kb') or 0)
        entry['memory_pss_kb'] = entry.get('memory_pss_kb', 0) + pss_kb
    return out


def _nodes(live: dict[str, Any], infos: dict[str, dict[str, Any]], shard: str | None) -> list[dict[str, Any]]:
    nodes = []
    for node, stats in sorted(live.items()):
        processes = len((stats.get('pool') or {}).get('processes') or [])
        host = node.split('@', 1)[-1]
        info = {**infos.get(host, {}), **infos.get(node, {})}
        nodes.append({'name': node, 'processes': processes, **info, **({'shard': shard} if shard else {})})
    return nodes


async def collect_status(gateway: Gateway) -> dict[str, Any]:
    """Build the `/status` answer; worker liveness is cached for a second."""
    links = gateway.router.links
    sharded = len(links) > 1
    out: dict[str, Any] = {'queue': 0, 'num_workers': 0, 'broker': 'ok', 'transport': gateway.router.path_name}
    try:
        out['in_flight'], out['gateway_processes'] = await gateway.admission.snapshot()
    except Exception as exc:  # the broker line below says why
        logger.debug('status: no in-flight count: %s', exc)
    out['max_in_flight'] = gateway.settings.max_in_flight
    out['broker_outage'] = _outage(links)
    reads = await asyncio.gather(*(_read_shard(link) for link in links), return_exceptions=True)
    down = [link for link, r in zip(links, reads, strict=True) if isinstance(r, BaseException)]
    for link, r in zip(links, reads, strict=True):
        if isinstance(r, BaseException):
            logger.warning('status: broker %s unreachable: %s', link.shard.name, r)
    if len(down) == len(links):
        out['broker'] = f'unreachable: {type(reads[0]).__name__}'
        if sharded:
            out['shards'] = [_shard_line(link, None, []) | {'broker': 'unreachable'} for link in links]
        return out
    if down:
        out['broker'] = 'degraded: ' + ', '.join(f'{link.shard.name} unreachable' for link in down)
    up = [(link, r) for link, r in zip(links, reads, strict=True) if not isinstance(r, BaseException)]
    lives = await asyncio.gather(*(_cached_live_workers(link) for link, _ in up))
    queues: dict[str, int] = {}
    nodes: list[dict[str, Any]] = []
    lines = {link.shard.name: _shard_line(link, None, []) | {'broker': 'unreachable'} for link in down}
    for (link, (shard_queues, infos)), live in zip(up, lives, strict=True):
        for queue, n in shard_queues.items():
            queues[queue] = queues.get(queue, 0) + n
        shard_nodes = _nodes(live, infos, link.shard.name if sharded else None)
        nodes += shard_nodes
        lines[link.shard.name] = _shard_line(link, shard_queues, shard_nodes)
    out['queues'] = queues
    out['queue'] = sum(queues.values())
    out['nodes'] = nodes
    out['num_nodes'] = len(nodes)
    out['num_workers'] = sum(n['processes'] for n in nodes)
    tiers = sorted({n['tier'] for n in nodes if n.get('tier')})
    out['isolation'] = tiers[0] if len(tiers) == 1 else tiers
    # Nodes whose submission runtimes differ show at a glance: one digest, or the list of them.
    digests = sorted({str((n.get('runtime') or {}).get('digest') or '') for n in nodes} - {''})
    out['runtime'] = digests[0] if len(digests) == 1 else digests
    if sharded:
        out['shards'] = [lines[link.shard.name] for link in links]
    return out


def _outage(links: list[ShardLink]) -> dict[str, Any]:
    """This gateway process's view of the broker outages (every shard's, added up; the worst state)."""
    views = [link.dispatcher.health.describe() for link in links]
    if len(views) == 1:
        return views[0]
    recovered = [v['recovered_at'] for v in views if v['recovered_at'] is not None]
    lasts = [v['last_outage_s'] for v in views if v['last_outage_s'] is not None]
    return {
        'state': 'ok' if all(v['state'] == 'ok' for v in views) else 'unreachable',
        'outages': sum(v['outages'] for v in views),
        'last_outage_s': lasts[-1] if lasts else None,
        'recovered_at': max(recovered) if recovered else None,
        'republished': sum(v['republished'] for v in views),
    }


def _shard_line(link: ShardLink, queues: dict[str, int] | None, nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """One shard's part of `/status`: its address (no password), queue, workers, and the router's view."""
    return {
        'name': link.shard.name,
        'address': link.shard.public_url,
        'broker': 'ok',
        'routing': 'up' if link.up else f'down: {link.error}',
        'queue': sum((queues or {}).values()),
        'num_nodes': len(nodes),
        'num_workers': sum(n['processes'] for n in nodes),
        'outstanding': link.outstanding,
        'outage': link.dispatcher.health.describe(),
    }
