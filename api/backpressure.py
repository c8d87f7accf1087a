"""Back-pressure: refuse work the gateway cannot take, before anything is enqueued.

* `BodyLimit` (pure ASGI middleware): a body over ``JUDGE_MAX_BODY_MB`` gets 413, from its
  ``Content-Length`` before a byte is read, or while streaming a chunked body.  It also answers 429 at
  once, without reading the body, when this process's own submissions alone fill the in-flight cap.
* `InFlight`: submissions accepted and not answered yet, in all gateway processes together (counted
  in Redis by `judge.transport.gateway.admission`; this process's own count when Redis cannot be reached).
  A request whose submissions would push the total over ``JUDGE_MAX_IN_FLIGHT`` gets 429 with
  ``Retry-After``; a batch over ``JUDGE_MAX_BATCH_SIZE`` (or larger than the cap itself, so it could
  never fit) gets 413.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.observe.metrics import IN_FLIGHT, REJECTED
from judge.transport.gateway.admission import Admission

logger = logging.getLogger('api.backpressure')


class InFlight:
    """Admission control by submissions in flight in every gateway process (see the module docstring).

    :param max_in_flight: cap on submissions in flight; 0 means no cap.
    :param max_batch_size: most submissions in one request.
    :param retry_after_s: the ``Retry-After`` of a 429 answer.
    """

    def __init__(self, max_in_flight: int, max_batch_size: int, retry_after_s: int) -> None:
        self.max_in_flight = max_in_flight
        self.max_batch_size = max_batch_size
        self.retry_after_s = retry_after_s
        self.counter: Admission | None = None
        """The cluster-wide count, attached when the gateway starts (`attach`)."""
        self.count = 0
        """This process's admitted submissions."""

    def attach(self, counter: Admission) -> None:
        """Count in ``counter`` (the first shard's Redis) from now on."""
        self.counter = counter

    @property
    def full(self) -> bool:
        """This process alone fills the cap: no submission fits (checked before reading a body)."""
        return 0 < self.max_in_flight <= self.count

    def busy_detail(self, n: int, total: int | None = None) -> dict[str, Any]:
        """The JSON detail of a 429 answer."""
        return {
            'error': 'too many submissions in flight; retry later',
            'submissions': n,
            'in_flight': self.count if total is None else total,
            'max_in_flight': self.max_in_flight,
            'retry_after_s': self.retry_after_s,
        }

    async def acquire(self, n: int) -> None:
        """Admit ``n`` submissions or raise `HTTPException` 413/429; pair with `release`."""
        if n > self.max_batch_size:
            REJECTED.labels('batch_size').inc()
            raise HTTPException(413, f'batch of {n} submissions exceeds JUDGE_MAX_BATCH_SIZE={self.max_batch_size}')
        if self.max_in_flight:
            if n > self.max_in_flight:
                REJECTED.labels('batch_size').inc()
                raise HTTPException(
                    413, f'batch of {n} submissions exceeds JUDGE_MAX_IN_FLIGHT={self.max_in_flight}; split it'
                )
            if self.counter is not None:
                admitted, total = await self.counter.acquire(n)
            else:
                total = self.count + n
                admitted = total <= self.max_in_flight
            if not admitted:
                REJECTED.labels('in_flight').inc()
                raise HTTPException(429, self.busy_detail(n, total), headers={'Retry-After': str(self.retry_after_s)})
        self.count += n
        IN_FLIGHT.inc(n)

    def release(self, n: int) -> None:
        """Give back ``n`` admitted submissions."""
        self.count -= n
        IN_FLIGHT.dec(n)
        if self.max_in_flight and self.counter is not None:
            self.counter.release(n)


async def _answer(send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> None:
    raw = json.dumps(body).encode()
    head = [(b'content-type', b'application/json'), (b'content-length', str(len(raw)).encode()), *headers]
    await send({'type': 'http.response.start', 'status': status, 'headers': head})
    await send({'type': 'http.response.body', 'body': raw})


class BodyLimit:
    """ASGI middleware: 413 for bodies over ``max_body_bytes``, early 429 to a POST on one of
    ``submit_paths`` (`api.routes.table.submit_paths`) when ``in_flight`` is full."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int, in_flight: InFlight, submit_paths: frozenset[str]) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.in_flight = in_flight
        self.submit_paths = submit_paths

    def _too_large(self) -> dict[str, Any]:
        REJECTED.labels('body_size').inc()
        return {'detail': f'request body exceeds JUDGE_MAX_BODY_MB ({self.max_body_bytes} bytes)'}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope['type'] != 'http':
            await self.app(scope, receive, send)
            return
        if self.in_flight.full and scope['method'] == 'POST' and scope['path'] in self.submit_paths:
            REJECTED.labels('in_flight').inc()
            retry = [(b'retry-after', str(self.in_flight.retry_after_s).encode())]
            await _answer(send, 429, {'detail': self.in_flight.busy_detail(0)}, retry)
            return
        length: int | None = None
        for name, value in scope['headers']:
            if name == b'content-length':
                try:
                    length = int(value)
                except ValueError:
                    length = None
                break
        if length is not None:
            # The server never hands the app more than Content-Length bytes: nothing to watch.
            if length > self.max_body_bytes:
                await _answer(send, 413, self._too_large(), [(b'connection', b'close')])
                return
            await self.app(scope, receive, send)
            return
        await self._streamed(scope, receive, send)

    async def _streamed(self, scope: Scope, receive: Receive, send: Send) -> None:
        received = 0
        rejected = False
        started = False

        async def limited_receive() -> Message:
            nonlocal received, rejected
            if rejected:
                return {'type': 'http.disconnect'}
            message = await receive()
            if message['type'] == 'http.request':
                received += len(message.get('body', b''))
                if received > self.max_body_bytes:
                    rejected = True
                    if not started:
                        await _answer(send, 413, self._too_large(), [(b'connection', b'close')])
                    return {'type': 'http.disconnect'}  # the app stops reading; its answer is dropped
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if rejected:
                return
            if message['type'] == 'http.response.start':
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception:
            if not rejected:
                raise
            logger.debug('request abandoned after its body exceeded %d bytes', self.max_body_bytes)
