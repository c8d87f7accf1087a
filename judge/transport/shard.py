"""A broker shard: one Redis (its address and clients) and the names of its keys.

Everything that reads or writes Redis goes through a `Shard`: the gateway's publishing and
waiting, the workers' replies and cancel checks, queue lengths for `/status` and `/metrics`, node
information.  Today the judge runs one shard (`Shard.from_settings`); several would be several
objects, each with its own Celery app.
"""

from __future__ import annotations

import json
from typing import Any

import redis
import redis.asyncio as aioredis

from judge.settings import Settings
from judge.transport.connect import RedisAddress
from judge.transport.keys import KeySpace


class Shard:
    """One Redis and its key space; clients are created on first use, in the process that uses them."""

    def __init__(self, address: RedisAddress, keys: KeySpace | None = None, name: str = 'default') -> None:
        self.name = name
        self.address = address
        self.keys = keys or KeySpace()
        self._sync: redis.Redis | None = None
        self._async: aioredis.Redis | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> Shard:
        """The shard named by ``REDIS_URI`` and the ``JUDGE_REDIS_*`` settings."""
        return cls(
            RedisAddress(
                url=settings.redis_uri,
                tls_verify=settings.redis_tls_verify,
                tls_ca_file=settings.redis_tls_ca_file,
                tls_cert_file=settings.redis_tls_cert_file,
                tls_key_file=settings.redis_tls_key_file,
                sentinel_master=settings.redis_sentinel_master,
            )
        )

    def __repr__(self) -> str:
        return f'Shard({self.name!r})'

    @property
    def client(self) -> redis.Redis:
        """This process's synchronous client (redis-py pools reset themselves after a fork)."""
        if self._sync is None:
            self._sync = self.address.sync_client(socket_timeout=30)
        return self._sync

    @property
    def aclient(self) -> aioredis.Redis:
        """This process's asyncio client (create it inside the running event loop)."""
        if self._async is None:
            self._async = self.address.async_client()
        return self._async

    async def aclose(self) -> None:
        """Close the asyncio client."""
        client, self._async = self._async, None
        if client is not None:
            await client.aclose()

    async def queue_lengths(self) -> dict[tuple[str, int], int]:
        """Messages waiting per (queue, priority step), in one round trip (one LLEN per list)."""
        lists = self.keys.queue_lists()
        pipe = self.aclient.pipeline(transaction=False)
        for _, _, key in lists:
            pipe.llen(key)
        lengths = await pipe.execute()
        return {(queue, step): int(n) for (queue, step, _), n in zip(lists, lengths, strict=True)}

    async def node_infos(self) -> dict[str, dict[str, Any]]:
        """What each worker node published about itself (`publish_node_info`)."""
        raw = await self.aclient.hgetall(self.keys.nodes)
        return {(k.decode() if isinstance(k, bytes) else str(k)): json.loads(v) for k, v in raw.items()}

    def publish_node_info(self, node: str, info: dict[str, Any]) -> None:
        """Record ``info`` (JSON-able) as node ``node``'s, for `/status`."""
        self.client.hset(self.keys.nodes, node, json.dumps(info))

    async def slot_infos(self) -> dict[str, dict[str, Any]]:
        """What each sandbox slot published about itself (`publish_slot_info`), by ``<node>/<slot>``."""
        raw = await self.aclient.hgetall(self.keys.slots)
        return {(k.decode() if isinstance(k, bytes) else str(k)): json.loads(v) for k, v in raw.items()}

    def publish_slot_info(self, node: str, slot: int, info: dict[str, Any]) -> None:
        """Record ``info`` (JSON-able) as slot ``slot`` of node ``node``'s, for `/status`."""
        self.client.hset(self.keys.slots, f'{node}/{slot}', json.dumps(info))
