"""The fast path's kombu transport: kombu's Redis transport with a reused client and cheap acks.

INTERNAL (see `judge.transport.internals`): overrides kombu's private ``Channel._create_client``,
and calls ``virtual.QoS.append`` / ``virtual.QoS.ack`` past kombu's Redis ``QoS``, writing the
"unacked" bookkeeping that ``kombu.transport.redis.QoS`` would write, to the same keys.

* Kombu builds a new ``redis.Redis`` object for every publish, ack and reject
  (``Channel.conn_or_acquire``), and building one fills a large table of response callbacks: more
  CPU than the Redis command itself, paid in the worker's main process once per ack.  A client holds
  no connection of its own (it borrows one from the pool per command), so one per pool is shared
  here; it is rebuilt when kombu replaces the pool (after a reconnect).  Like the stock path's
  channels, these are guarded (`judge.transport.internals.guard`) against a connection collected
  after a broker loss.
* With late acks kombu records each delivered message in an "unacked" hash and index before running
  it, and removes it on ack, each time through a redis-py pipeline.  Here the same commands, in the
  same MULTI/EXEC transactions, go through `judge.transport.internals.packed`, falling back to kombu's own code
  on any error (and whenever a ``global_keyprefix`` is set).

Selected by ``JUDGE_TRANSPORT=fast`` (`judge.transport.celery_settings`); the URL, TLS and Sentinel
settings are kombu's own.
"""

from __future__ import annotations

import json
from time import time
from typing import Any

from kombu.transport import redis as kombu_redis
from kombu.transport import virtual

from judge.transport.internals.guard import Guard
from judge.transport.internals.packed import PackedCalls, transaction_ran


class _ReusedClient(Guard):
    """Mixin for kombu Redis channels: hand out the same synchronous client while the pool lives."""

    _judge_client: tuple[Any, Any] | None = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:  # the consumer's BRPOP client: kombu caches it already
            return super()._create_client(asynchronous=True)
        pool = self.judge_pool()
        cached = self._judge_client
        if cached is None or cached[0] is not pool:
            cached = (pool, super()._create_client(asynchronous=False))
            self._judge_client = cached
        return cached[1]


class QoS(kombu_redis.QoS):  # type: ignore[misc]
    """Kombu's Redis QoS with its per-message bookkeeping sent as packed commands."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._packed = PackedCalls(lambda: self.channel.judge_pool())

    def _fast(self, commands: list[tuple[Any, ...]]) -> bool:
        if self.channel.global_keyprefix:  # kombu's client prefixes keys; keep its path
            return False
        replies = self._packed.call(commands)
        return replies is not None and transaction_ran(replies)

    def append(self, message: Any, delivery_tag: str) -> None:
        """Record ``message`` as delivered but not yet acknowledged (restored if never acked)."""
        delivery = message.delivery_info
        # The message came from JSON, so the standard encoder (cached, no hooks) handles it.
        payload = json.dumps([message._raw, delivery['exchange'], delivery['routing_key']])
        if self._fast(
            [
                ('MULTI',),
                ('ZADD', self.unacked_index_key, time(), delivery_tag),
                ('HSET', self.unacked_key, delivery_tag, payload),
                ('EXEC',),
            ]
        ):
            virtual.QoS.append(self, message, delivery_tag)
        else:
            super().append(message, delivery_tag)

    def ack(self, delivery_tag: str) -> None:
        """Forget ``delivery_tag``: it will not be redelivered."""
        if self._fast(
            [
                ('MULTI',),
                ('ZREM', self.unacked_index_key, delivery_tag),
                ('HDEL', self.unacked_key, delivery_tag),
                ('EXEC',),
            ]
        ):
            virtual.QoS.ack(self, delivery_tag)
        else:
            super().ack(delivery_tag)


class Channel(_ReusedClient, kombu_redis.Channel):  # type: ignore[misc]
    """A Redis channel that reuses its client and keeps its acks cheap."""

    QoS = QoS


class Transport(kombu_redis.Transport):  # type: ignore[misc]
    """``redis://`` and ``rediss://`` (TLS comes from ``broker_use_ssl``)."""

    Channel = Channel


class SentinelChannel(_ReusedClient, kombu_redis.SentinelChannel):  # type: ignore[misc]
    """A Sentinel channel that reuses its client (rebuilt when failover replaces the pool)."""

    QoS = QoS


class SentinelTransport(kombu_redis.SentinelTransport):  # type: ignore[misc]
    """``sentinel://`` URLs."""

    Channel = SentinelChannel
