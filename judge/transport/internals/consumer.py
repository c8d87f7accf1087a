"""The fast path's worker consumer: coalesced task events, and a short reconnection backoff.

INTERNAL (see `judge.transport.internals`): overrides Celery's undocumented
``Consumer.on_send_event_buffered`` hook and calls its private ``_flush_events``; overrides
``Consumer.ensure_connected`` to pass kombu's ``Connection.ensure_connection`` its intervals.

* Celery buffers task events and publishes them as one ``task.multi`` message per flush, but asks
  for a flush after every single event, so each task costs several Redis round trips in the worker's
  main process (the serial bottleneck).  Delaying the flush by a few milliseconds lets events of many
  tasks share one publish; Flower sees them at most `EVENT_FLUSH_S` later.
* After losing the broker Celery retries the connection with kombu's default backoff (2 s, 4 s,
  6 s ... up to 30 s between tries), so a worker may come back up to 30 s after Redis has.  Here the
  waits are 0.5 s, 1 s, 1.5 s, then `RECONNECT_MAX_S` (the stock path keeps kombu's).
"""

from __future__ import annotations

import functools
from typing import Any

from celery.worker.consumer import Consumer as CeleryConsumer

EVENT_FLUSH_S = 0.05
RECONNECT_FIRST_S = 0.5
RECONNECT_STEP_S = 0.5
RECONNECT_MAX_S = 2.0


class Consumer(CeleryConsumer):  # type: ignore[misc]
    """Celery's consumer with coalesced event flushes and a short reconnection backoff (`worker_consumer`)."""

    _flush_pending = False

    def ensure_connected(self, conn: Any) -> Any:
        """Celery's (with its retries and logs), kombu's backoff capped at `RECONNECT_MAX_S`."""
        conn.ensure_connection = functools.partial(
            conn.ensure_connection,
            interval_start=RECONNECT_FIRST_S,
            interval_step=RECONNECT_STEP_S,
            interval_max=RECONNECT_MAX_S,
        )
        return super().ensure_connected(conn)

    def on_send_event_buffered(self) -> None:
        if not self.hub:
            return
        if not self._flush_pending:
            self._flush_pending = True
            self.hub.call_later(EVENT_FLUSH_S, self._coalesced_flush)

    def _coalesced_flush(self, *_: Any) -> None:
        self._flush_pending = False
        self._flush_events()
