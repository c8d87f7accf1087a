"""A broker shard: one Redis (its address and clients) and the names of its keys.

Everything that reads or writes Redis goes through a `Shard`: the gateway's publishing and
waiting, the workers' replies and cancel checks, queue lengths for `/status` and `/metrics`, node
information.  ``JUDGE_BROKER_SHARDS`` lists several independent Redis instances: the gateway holds
one `Shard` per instance (`Shard.all_from_settings`, each with its own Celery app, see
`judge.transport.gateway.router`), a worker instance the one it consumes from (`Shard.from_settings`,
``JUDGE_WORKER_SHARD``).  Every shard has the same key names: they are separate servers.
"""

from __future__ import annotations

import json
from typing import Any

import redis
import redis.asyncio as aioredis

from judge.settings import Settings
from judge.transport.connect import RedisAddress
from judge.transport.keys import KeySpace


def redact(url: str) -> str:
    """``url`` without its password (``redis://:secret@h:6379/0`` → ``redis://***@h:6379/0``)."""
    head, sep, rest = url.partition('://')
    if not sep or '@' not in rest.split('/', 1)[0]:
        return url
    return f'{head}://***@{rest.split("@", 1)[1]}'


class Shard:
    """One Redis and its key space; clients are created on first use, in the process that uses them."""

    def __init__(
        self,
        address: RedisAddress,
        keys: KeySpace | None = None,
        name: str = 's0',
        index: int = 0,
        timeout_s: float = 5.0,
    ) -> None:
        self.name = name
        self.index = index
        self.address = address
        self.keys = keys or KeySpace()
        self.timeout_s = timeout_s
        """How long a command may go unanswered before it fails (``JUDGE_REDIS_TIMEOUT_S``)."""
        self._sync: redis.Redis | None = None
        self._async: aioredis.Redis | None = None

    @classmethod
    def from_settings(cls, settings: Settings, index: int | None = None) -> Shard:
        """Shard ``index`` of `Settings.shard_urls` (default: this process's, ``JUDGE_WORKER_SHARD``),
        with the ``JUDGE_REDIS_*`` TLS and Sentinel settings (the same for every shard)."""
        index = settings.worker_shard if index is None else index
        address = RedisAddress(
            url=settings.shard_urls[index],
            tls_verify=settings.redis_tls_verify,
            tls_ca_file=settings.redis_tls_ca_file,
            tls_cert_file=settings.redis_tls_cert_file,
            tls_key_file=settings.redis_tls_key_file,
            sentinel_master=settings.redis_sentinel_master,
        )
        return cls(address, name=f's{index}', index=index, timeout_s=settings.redis_timeout_s)

    @classmethod
    def all_from_settings(cls, settings: Settings) -> list[Shard]:
        """Every shard of `Settings.shard_urls`, in order."""
        return [cls.from_settings(settings, i) for i in range(len(settings.shard_urls))]

    @property
    def public_url(self) -> str:
        """The shard's Redis URL without credentials (for `/status`)."""
        return redact(self.address.url)

    @property
    def label(self) -> str:
        """The shard's name and its Redis address without credentials, for logs."""
        return f'{self.name} {self.public_url}'

    def __repr__(self) -> str:
        return f'Shard({self.name!r})'

    @property
    def client(self) -> redis.Redis:
        """This process's synchronous client (redis-py pools reset themselves after a fork)."""
        if self._sync is None:
            self._sync = self.address.sync_client(socket_timeout=self.timeout_s)
        return self._sync

    @property
    def aclient(self) -> aioredis.Redis:
        """This process's asyncio client (create it inside the running event loop)."""
        if self._async is None:
            self._async = self.address.async_client(socket_timeout=self.timeout_s)
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

    def publish_reconnects(self, node: str, info: dict[str, Any]) -> None:
        """Record how often worker node ``node`` reconnected to this broker (JSON-able ``info``)."""
        self.client.hset(self.keys.reconnects, node, json.dumps(info))

    async def reconnect_infos(self) -> dict[str, dict[str, Any]]:
        """What each worker node recorded about its reconnections (`publish_reconnects`)."""
        raw = await self.aclient.hgetall(self.keys.reconnects)
        return {(k.decode() if isinstance(k, bytes) else str(k)): json.loads(v) for k, v in raw.items()}
