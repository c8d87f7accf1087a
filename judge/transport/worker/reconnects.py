"""The worker's broker reconnections: logged, counted in Redis for `/status` and `/metrics`, sent to Flower.

Celery's consumer reconnects by itself when it loses the broker (``broker_connection_retry``; kombu
waits 2 s, 4 s, 6 s ... up to 30 s between tries, the fast path's consumer 0.5 s to 2 s,
`judge.transport.internals.consumer`) and keeps its pool meanwhile, so the pool processes
keep their warm sandbox slots and a result computed during the outage waits in its pool process
(`judge.transport.worker.replies`, or Celery's result backend retries on the stock path).

`BrokerWatch` is a consumer bootstep (Celery's public extension API, both transport paths): the
consumer stops its steps when the connection is lost and starts them again once it has reconnected,
so every start after the first is one reconnection.  Each one is logged with the outage as this
worker saw it, recorded as ``{count, last_outage_s, at}`` under the node's name in the shard's
``judge:reconnects`` hash, and announced with a ``worker-broker-reconnected`` event, which Flower
counts per worker (when it is connected at that moment).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import bootsteps

from judge.settings import get_settings
from judge.transport.shard import Shard

logger = logging.getLogger('judge.transport.worker.reconnects')

EVENT = 'worker-broker-reconnected'


class BrokerWatch(bootsteps.StartStopStep):  # type: ignore[misc]
    """Counts and reports the consumer's reconnections (add it to ``app.steps['consumer']``)."""

    requires = ('celery.worker.consumer.heart:Heart',)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.starts = 0
        self.reconnects = 0
        self.lost_at: float | None = None
        self._shard: Shard | None = None

    def start(self, parent: Any) -> None:
        """Connected: the first time, nothing to report; afterwards, one reconnection."""
        self.starts += 1
        if self.starts == 1:
            return
        self.reconnects += 1
        outage_s = time.monotonic() - self.lost_at if self.lost_at is not None else 0.0
        self.lost_at = None
        node = str(getattr(parent, 'hostname', '') or '')
        logger.warning('%s reconnected to the broker after %.1f s (reconnection %d)', node, outage_s, self.reconnects)
        info = {'count': self.reconnects, 'last_outage_s': round(outage_s, 3), 'at': time.time()}
        try:
            if self._shard is None:
                self._shard = Shard.from_settings(get_settings())
            self._shard.publish_reconnects(node, info)
        except Exception as exc:  # reporting never costs the worker its connection
            logger.warning('could not record the reconnection: %s', exc)
        dispatcher = getattr(parent, 'event_dispatcher', None)
        if dispatcher is not None and getattr(dispatcher, 'enabled', False):
            try:
                dispatcher.send(EVENT, reconnects=self.reconnects, outage_s=round(outage_s, 3))
            except Exception as exc:
                logger.warning('could not send %s: %s', EVENT, exc)

    def stop(self, parent: Any) -> None:
        """The connection is gone (or the worker stops): the outage, if any, starts now."""
        if self.lost_at is None:
            self.lost_at = time.monotonic()
