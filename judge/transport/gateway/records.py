"""Records a compatible door keeps to be fetched later by token (the Judge0 door's submissions): JSON
under `judge.transport.keys.KeySpace.door_record`, each with an expiry, in one shard's Redis (the
first: every gateway process finds them there).  Only this module names those keys.

Writes that come together are written together: a write waits one turn of the event loop for the
others of the moment, then all go in one pipelined round trip (each writer still returns only once
its record is stored).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from judge.transport.shard import Shard


class Records:
    """Token -> JSON record, kept ``ttl_s`` seconds from its last write."""

    def __init__(self, shard: Shard, ttl_s: int) -> None:
        self.shard = shard
        self.ttl_s = ttl_s
        self._pending: dict[str, str] = {}
        self._next: asyncio.Task[None] | None = None

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

    async def _write(self) -> None:
        await asyncio.sleep(0)  # the writes of this moment join
        batch, self._pending, self._next = self._pending, {}, None
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
        raw = await self.shard.aclient.mget([self.shard.keys.door_record(t) for t in tokens])
        return [None if value is None else json.loads(value) for value in raw]
