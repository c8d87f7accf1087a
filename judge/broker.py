"""Kombu's Redis transport, with one reusable redis-py client per connection pool.

Kombu builds a new ``redis.Redis`` object for every publish, ack and reject
(``Channel.conn_or_acquire``).  Building one fills a 170-entry case-insensitive table of response
callbacks: measured here at about 0.35 ms of CPU, more than the Redis command itself.  In a worker
that is paid in the main process, once per ack, which serialises every task; in the gateway once
per published message.  A client holds no connection of its own (it borrows one from the pool per
command), so one per pool can be shared, by threads too.  It is rebuilt when kombu replaces the pool
(after a reconnect).

Selected in `celeryconfig.py` with ``broker_transport``; the URL, TLS and Sentinel settings are
kombu's own.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis as kombu_redis


class _ReusedClient:
    """Mixin for kombu Redis channels: hand out the same synchronous client while the pool lives."""

    _judge_client: tuple[Any, Any] | None = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:  # the consumer's BRPOP client: kombu caches it already
            return super()._create_client(asynchronous=True)  # type: ignore[misc]
        pool = self.pool  # type: ignore[attr-defined]
        cached = self._judge_client
        if cached is None or cached[0] is not pool:
            cached = (pool, super()._create_client(asynchronous=False))  # type: ignore[misc]
            self._judge_client = cached
        return cached[1]


class Channel(_ReusedClient, kombu_redis.Channel):  # type: ignore[misc]
    """A Redis channel that reuses its client."""


class Transport(kombu_redis.Transport):  # type: ignore[misc]
    """``redis://`` and ``rediss://`` (TLS comes from ``broker_use_ssl``)."""

    Channel = Channel


class SentinelChannel(_ReusedClient, kombu_redis.SentinelChannel):  # type: ignore[misc]
    """A Sentinel channel that reuses its client (rebuilt when failover replaces the pool)."""


class SentinelTransport(kombu_redis.SentinelTransport):  # type: ignore[misc]
    """``sentinel://`` URLs."""

    Channel = SentinelChannel
