"""Records a compatible door keeps to be fetched later by token (the Judge0 door's submissions): JSON
under `judge.transport.keys.KeySpace.door_record`, each with an expiry, in one shard's Redis (the
first: every gateway process finds them there).  Only this module names those keys.

Writes that come together are written together: a write waits one turn of the event loop for the
others of the moment, then all go in one pipelined round trip (each writer still returns only once
its record is stored).  A record whose writer need not wait (`Records.keep`: the answer it holds was
already given) waits up to `KEEP_WINDOW_S` for others, so that busy moments take few round trips; until
it is stored, this process answers for it from memory.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Any

from judge.transport.shard import Shard

logger = logging.getLogger('judge.transport.gateway.records')

KEEP_WINDOW_S = 0.002


class Records:
    """Token -> JSON record, kept ``ttl_s`` seconds from its last write."""

    def __init__(self, shard: Shard, ttl_s: int) -> None:
        self.shard = shard
        self.ttl_s = ttl_s
        self._pending: dict[str, str] = {}
        self._next: asyncio.Task[None] | None = None
        self._kept: dict[str, str] = {}
        """Records `keep` has not stored yet, by key (also while their write is under way)."""
        self._keeping: asyncio.Task[None] | None = None

    async def put(self, token: str, record: dict[str, Any]) -> None:
        """Store (or replace) ``token``'s record."""
        await self.put_many({token: record})

    async def put_many(self, records: dict[str, dict[str, Any]]) -> None:
        """Store (or replace) several records; returns once they are stored."""
        for token, record in records.items():
            self._pending[self.shard.keys.door_record(token)] = json.dumps(record)
        if self._next is None:
            self._next = asyncio.get_running_loop().create_task(self._write())
        await asyncio.shield(self._next)

    def keep(self, token: str, record: dict[str, Any]) -> None:
        """Store ``token``'s record without waiting: within `KEEP_WINDOW_S`, with the others of then."""
        self._kept[self.shard.keys.door_record(token)] = json.dumps(record)
        if self._keeping is None:
            self._keeping = asyncio.get_running_loop().create_task(self._write_kept())

    async def _write_kept(self) -> None:
        await asyncio.sleep(KEEP_WINDOW_S)
        batch, self._keeping = dict(self._kept), None
        try:
            await self._store(batch)
        except Exception:  # the answers were given; only fetching them again by token will not work
            logger.exception('could not keep %d door records', len(batch))
        for key, value in batch.items():
            if self._kept.get(key) is value:
                del self._kept[key]

    async def _write(self) -> None:
        await asyncio.sleep(0)  # the writes of this moment join
        batch, self._pending, self._next = self._pending, {}, None
        await self._store(batch)

    async def _store(self, batch: dict[str, str]) -> None:
        if len(batch) == 1:
            ((key, value),) = batch.items()
            await self.shard.aclient.set(key, value, ex=self.ttl_s)
            return
        pipe = self.shard.aclient.pipeline(transaction=False)
        for key, value in batch.items():
            pipe.set(key, value, ex=self.ttl_s)
        await pipe.execute()

    async def get(self, tokens: Sequence[str]) -> list[dict[str, Any] | None]:
        """The records of ``tokens``, in order (None: unknown or expired)."""
        if not tokens:
            return []
        keys = [self.shard.keys.door_record(t) for t in tokens]
        raw = await self.shard.aclient.mget(keys)
        return [
            json.loads(kept)
            if (kept := self._kept.get(key)) is not None
            else None
            if value is None
            else json.loads(value)
            for key, value in zip(keys, raw, strict=True)
        ]
