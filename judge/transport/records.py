"""Records a compatible door keeps to be fetched later by token (the Judge0 door's submissions): JSON
under `judge.transport.keys.KeySpace.door_record`, each with an expiry, in one shard's Redis (the
first: every gateway process finds them there).  Only this module names those keys."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from judge.transport.shard import Shard


class Records:
    """Token -> JSON record, kept ``ttl_s`` seconds from its last write."""

    def __init__(self, shard: Shard, ttl_s: int) -> None:
        self.shard = shard
        self.ttl_s = ttl_s

    async def put(self, token: str, record: dict[str, Any]) -> None:
        """Store (or replace) ``token``'s record."""
        await self.shard.aclient.set(self.shard.keys.door_record(token), json.dumps(record), ex=self.ttl_s)

    async def put_many(self, records: dict[str, dict[str, Any]]) -> None:
        """Store several records in one round trip."""
        pipe = self.shard.aclient.pipeline(transaction=False)
        for token, record in records.items():
            pipe.set(self.shard.keys.door_record(token), json.dumps(record), ex=self.ttl_s)
        await pipe.execute()

    async def get(self, tokens: Sequence[str]) -> list[dict[str, Any] | None]:
        """The records of ``tokens``, in order (None: unknown or expired)."""
        if not tokens:
            return []
        raw = await self.shard.aclient.mget([self.shard.keys.door_record(t) for t in tokens])
        return [None if value is None else json.loads(value) for value in raw]
