"""A guard, on both transport paths, against a worker stopping after a broker loss (Celery 5.7, kombu 5.7).

INTERNAL (see `judge.transport.internals`): overrides kombu's ``Channel._create_client`` and reads
its channels' ``connection.client`` (the kombu transport's connection).

After losing the broker, Celery's consumer collects its connection (kombu's transport forgets its
client) and then closes it.  Closing the channel restores its unacked messages, and acking a message
it delivered needs a client too; kombu rebuilds the channel's dropped pool from ``transport.client``,
which is now None, and raises ``AttributeError``.  Celery does not count that as a connection error:
the worker stops ("Unrecoverable error"), in about one Sentinel failover in four with tasks running
(tests/system/test_broker_faults.py).  Here such a channel fails as a connection error instead,
which Celery ignores (and logs for an ack), and the worker reconnects.  The unacked messages it
could not restore come back after the visibility timeout, or are superseded by the gateway's
republish.

The stock path (``JUDGE_TRANSPORT=stock``) uses these classes with nothing else changed; the fast
path's (`judge.transport.internals.kombu_redis`) build on them.
"""

from __future__ import annotations

from typing import Any

import redis
from kombu.transport import redis as kombu_redis


class Guard:
    """Mixin for kombu Redis channels: a channel whose transport has no connection any more is closed."""

    def judge_pool(self) -> Any:
        """kombu's pool of this channel; a connection error once the channel's connection is gone."""
        if getattr(getattr(self, 'connection', None), 'client', None) is None:
            raise redis.ConnectionError('the broker connection is closed (collected after a broker loss)')
        return self.pool  # type: ignore[attr-defined]

    def _create_client(self, asynchronous: bool = False) -> Any:
        self.judge_pool()
        return super()._create_client(asynchronous=asynchronous)  # type: ignore[misc]


class Channel(Guard, kombu_redis.Channel):  # type: ignore[misc]
    """kombu's Redis channel, guarded."""


class Transport(kombu_redis.Transport):  # type: ignore[misc]
    """``redis://`` and ``rediss://``, guarded."""

    Channel = Channel


class SentinelChannel(Guard, kombu_redis.SentinelChannel):  # type: ignore[misc]
    """kombu's Sentinel channel, guarded."""


class SentinelTransport(kombu_redis.SentinelTransport):  # type: ignore[misc]
    """``sentinel://`` URLs, guarded."""

    Channel = SentinelChannel
