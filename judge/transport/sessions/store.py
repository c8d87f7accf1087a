"""Live sessions in Redis: each session's record and cells, its lock, and which worker nodes are alive.

Keys (first broker shard; docs/sessions.md):

* ``judge:session:<id>``: hash, the record: ``node`` (where it lives), ``epoch`` (bumped each time it
  is placed on a node), ``live`` (a process holds it now), ``built`` (it has been live once), ``spec``
  (JSON: kind, limits, TTL, seed), ``parent``/``forked_at``, ``created``, ``used``;
* ``judge:session:<id>:cells``: list, every cell run (JSON: code, stdin, seed, time limit, what it did,
  why its replay may differ), in order: what rebuilds the session on any node;
* ``judge:session:<id>:lock``: one call at a time (a token, with an expiry);
* ``judge:alive:<node>``: exists while the node's worker says it is alive (`Heartbeat`), and the set
  ``judge:session-nodes`` of nodes that ever said so.

Record and cells expire after the session's TTL without a call (plus `TTL_MARGIN_S`).  The gateway
(`SessionStore`, asyncio) creates, places, locks; the worker (`SessionRecords`, blocking) appends cells
(only at the expected index and epoch, atomically) and notes evictions.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from typing import Any

import redis
import redis.asyncio as aioredis

from judge.transport.keys import PRIORITY_RUN

TTL_MARGIN_S = 5
"""The record outlives the host's idle TTL by this much (the host expires its copy first and says so)."""
NODES = 'judge:session-nodes'
HOSTS = 'judge:session-hosts'
"""Hash: node -> JSON of its session host's last figures (sessions, memory), written by its workers."""
PRIORITY = PRIORITY_RUN
"""Session calls are interactive: the single run's priority (their queue is consumed first)."""

_APPEND = """
if redis.call('EXISTS', KEYS[2]) == 0 then return -2 end
if redis.call('HGET', KEYS[2], 'epoch') ~= ARGV[3] then return -3 end
if redis.call('LLEN', KEYS[1]) ~= tonumber(ARGV[1]) then return -1 end
redis.call('RPUSH', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[2], 'live', ARGV[5], 'built', '1', 'used', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return redis.call('LLEN', KEYS[1])
"""
_UNLOCK = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


def record_key(sid: str) -> str:
    """A session's record."""
    return f'judge:session:{sid}'


def cells_key(sid: str) -> str:
    """A session's cells."""
    return f'judge:session:{sid}:cells'


def lock_key(sid: str) -> str:
    """A session's call lock."""
    return f'judge:session:{sid}:lock'


def alive_key(node: str) -> str:
    """Exists while ``node``'s worker is alive."""
    return f'judge:alive:{node}'


def session_queue(node: str) -> str:
    """The Celery queue only ``node``'s worker consumes: every call of the sessions it holds."""
    return f'judge.session.{node}'


def decode(raw: dict[Any, Any]) -> dict[str, str]:
    """A hash as text."""
    return {
        (k.decode() if isinstance(k, bytes) else str(k)): (v.decode() if isinstance(v, bytes) else str(v))
        for k, v in raw.items()
    }


def ttl_ms(record: dict[str, str]) -> int:
    """How long the record and cells live without a call."""
    return int((float(json.loads(record.get('spec') or '{}').get('ttl_s') or 600) + TTL_MARGIN_S) * 1000)


class SessionStore:
    """The gateway's side (asyncio)."""

    def __init__(self, client: aioredis.Redis) -> None:
        self.redis = client
        self._append = client.register_script(_APPEND)
        self._unlock = client.register_script(_UNLOCK)

    async def get(self, sid: str) -> dict[str, str] | None:
        """The record (None: no such session, or it expired)."""
        raw = await self.redis.hgetall(record_key(sid))
        return decode(raw) if raw else None

    async def create(self, sid: str, spec: dict[str, Any], node: str, extra: dict[str, str] | None = None) -> bool:
        """Write a new record (False when ``sid`` exists)."""
        return not await self.create_many([sid], spec, node, extra)

    async def create_many(
        self, sids: list[str], spec: dict[str, Any], node: str, extra: dict[str, str] | None = None
    ) -> list[str]:
        """Write a new record for each of ``sids`` (a fork's children), in two round trips: all or none.
        Returns the ids that exist already (then nothing is written)."""
        fields: dict[Any, Any] = {'node': node, 'epoch': '0', 'live': '0', 'built': '0', 'spec': json.dumps(spec)}
        fields |= {'created': repr(time.time()), 'used': repr(time.time())} | (extra or {})
        pipe = self.redis.pipeline(transaction=False)
        for sid in sids:
            pipe.hsetnx(record_key(sid), 'epoch', '0')
        claimed = await pipe.execute()
        taken = [sid for sid, ok in zip(sids, claimed, strict=True) if not ok]
        if taken:
            if mine := [record_key(sid) for sid, ok in zip(sids, claimed, strict=True) if ok]:
                await self.redis.delete(*mine)
            return taken
        pipe = self.redis.pipeline(transaction=True)
        for sid in sids:
            pipe.hset(record_key(sid), mapping=fields)
            pipe.pexpire(record_key(sid), ttl_ms(fields))
        await pipe.execute()
        return []

    async def cells(self, sid: str) -> list[dict[str, Any]]:
        """Every recorded cell."""
        return [json.loads(c) for c in await self.redis.lrange(cells_key(sid), 0, -1)]

    async def count(self, sid: str) -> int:
        """How many cells are recorded."""
        return int(await self.redis.llen(cells_key(sid)))

    async def copy_cells(self, sid: str, children: list[str], record: dict[str, str]) -> None:
        """Give each child the parent's cells (their replay starts with them)."""
        cells = await self.redis.lrange(cells_key(sid), 0, -1)
        pipe = self.redis.pipeline(transaction=False)
        for child in children:
            if cells:
                pipe.rpush(cells_key(child), *cells)
                pipe.pexpire(cells_key(child), ttl_ms(record))
        await pipe.execute()

    async def lock(self, sid: str, hold_s: float, wait_s: float) -> str | None:
        """Take the session's call lock (polling up to ``wait_s``); its token, or None."""
        token, deadline = uuid.uuid4().hex, time.monotonic() + wait_s
        while True:
            if await self.redis.set(lock_key(sid), token, nx=True, px=int(hold_s * 1000)):
                return token
            if time.monotonic() >= deadline:
                return None
            import asyncio

            await asyncio.sleep(0.02)

    async def unlock(self, sid: str, token: str) -> None:
        """Release the lock if it is still ours."""
        await self._unlock(keys=[lock_key(sid)], args=[token])

    async def alive_nodes(self) -> list[str]:
        """Nodes whose worker is alive now."""
        nodes = sorted(m.decode() if isinstance(m, bytes) else str(m) for m in await self.redis.smembers(NODES))
        if not nodes:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for node in nodes:
            pipe.exists(alive_key(node))
        return [n for n, up in zip(nodes, await pipe.execute(), strict=True) if up]

    async def hosts(self) -> dict[str, dict[str, Any]]:
        """Each node's session host figures (as its workers last saw them) and whether the node is alive."""
        raw = decode(await self.redis.hgetall(HOSTS))
        alive = set(await self.alive_nodes())
        return {node: json.loads(text) | {'alive': node in alive} for node, text in sorted(raw.items())}

    async def alive(self, node: str) -> bool:
        """Whether ``node``'s worker is alive."""
        return bool(node) and bool(await self.redis.exists(alive_key(node)))

    async def place(self, sid: str, record: dict[str, str], avoid: str = '') -> tuple[str, int] | None:
        """Where the session's next call goes: its node while alive, else another live node (its epoch
        bumped: the old node's copy, if it comes back, is stale); None when no node is alive."""
        node = record.get('node') or ''
        if node and node != avoid and await self.alive(node):
            return node, int(record.get('epoch') or 0)
        nodes = [n for n in await self.alive_nodes() if n != avoid] or await self.alive_nodes()
        if not nodes:
            return None
        node = random.choice(nodes)
        epoch = int(await self.redis.hincrby(record_key(sid), 'epoch', 1))
        await self.redis.hset(record_key(sid), mapping={'node': node, 'live': '0'})
        record.update(node=node, epoch=str(epoch), live='0')
        return node, epoch

    async def touch(self, sid: str, record: dict[str, str]) -> None:
        """A call: the record and cells live another TTL (unless the session went meanwhile)."""
        if not await self.redis.exists(record_key(sid)):
            return
        pipe = self.redis.pipeline(transaction=False)
        pipe.hset(record_key(sid), 'used', repr(time.time()))
        pipe.pexpire(record_key(sid), ttl_ms(record))
        pipe.pexpire(cells_key(sid), ttl_ms(record))
        await pipe.execute()

    async def delete(self, sid: str) -> bool:
        """Forget the session (False: there was none)."""
        return bool(await self.redis.delete(record_key(sid), cells_key(sid), lock_key(sid)))


class SessionRecords:
    """The worker's side (blocking)."""

    def __init__(self, client: redis.Redis) -> None:
        self.redis = client
        self._append = client.register_script(_APPEND)

    def get(self, sid: str) -> dict[str, str] | None:
        """The record (None: gone)."""
        raw = self.redis.hgetall(record_key(sid))
        return decode(raw) if raw else None

    def cells(self, sid: str) -> list[dict[str, Any]]:
        """Every recorded cell."""
        return [json.loads(c) for c in self.redis.lrange(cells_key(sid), 0, -1)]

    def count(self, sid: str) -> int:
        """How many cells are recorded."""
        return int(self.redis.llen(cells_key(sid)))

    def last(self, sid: str) -> dict[str, Any] | None:
        """The last recorded cell (None: none)."""
        raw = self.redis.lindex(cells_key(sid), -1)
        return None if raw is None else dict(json.loads(raw))

    def append(self, sid: str, index: int, cell: dict[str, Any], record: dict[str, str], live: bool) -> int:
        """Record cell ``index`` (only if the record has exactly ``index`` cells and the epoch is unchanged):
        the new count, -1 (another count), -2 (no record), -3 (another epoch)."""
        args: list[Any] = [
            index,
            json.dumps(cell),
            record.get('epoch', '0'),
            ttl_ms(record),
            '1' if live else '0',
            repr(time.time()),
        ]
        return int(self._append(keys=[cells_key(sid), record_key(sid)], args=args))

    def mark(self, sid: str, **fields: str) -> None:
        """Set record fields (the record must exist)."""
        self.mark_many([sid], **fields)

    def mark_many(self, sids: list[str], **fields: str) -> None:
        """Set the same fields on each existing record of ``sids``, in two round trips."""
        pipe = self.redis.pipeline(transaction=False)
        for sid in sids:
            pipe.exists(record_key(sid))
        present = pipe.execute()
        pipe = self.redis.pipeline(transaction=False)
        for sid, there in zip(sids, present, strict=True):
            if there:
                pipe.hset(record_key(sid), mapping=dict[Any, Any](fields))
        pipe.execute()

    def forget(self, sid: str) -> None:
        """An expired session: its record and cells go."""
        self.redis.delete(record_key(sid), cells_key(sid), lock_key(sid))

    def publish_host(self, node: str, figures: dict[str, Any]) -> None:
        """Record the node's session host figures (``GET /sessions``)."""
        self.redis.hset(HOSTS, node, json.dumps(figures | {'at': time.time()}))

    def heartbeat(self, node: str, every_s: float) -> None:
        """Say ``node`` is alive for three heartbeats."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.sadd(NODES, node)
        pipe.set(alive_key(node), repr(time.time()), px=int(every_s * 3000))
        pipe.execute()

    def leave(self, node: str) -> None:
        """The node stops: its sessions move at their next call."""
        self.redis.delete(alive_key(node))
