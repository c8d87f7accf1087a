"""Celery task messages written straight onto the Redis broker's lists, from asyncio.

Celery's publish path (``send_task`` → kombu ``Producer.publish``) is synchronous, so the gateway had
to run it in a thread, and it costs about 0.4 ms of CPU per message, nearly all of it kombu's
bookkeeping around one ``LPUSH``.  Here the message is still built by Celery
(``app.amqp.as_task_v2``: the protocol-2 headers and body) and wrapped exactly as kombu's Redis
transport wraps it (JSON body in base64, delivery info, a per-priority list); only the write is
ours: one ``LPUSH`` per slice of a batch, pipelined on the gateway's asyncio Redis client.
``tests/test_publish.py`` checks the envelope field by field against one that kombu wrote.
"""

from __future__ import annotations

import base64
import bisect
import json
import uuid
from collections.abc import Sequence
from typing import Any

from celery import Celery

_DEFAULT_PRIORITY_STEPS = (0, 3, 6, 9)  # kombu's default for the Redis transport
_DELIVERY_MODE_PERSISTENT = 2


class TaskMessages:
    """Builds broker messages for one Celery app, with its broker transport options."""

    def __init__(self, app: Celery) -> None:
        self.app = app
        options = app.conf.broker_transport_options or {}
        self.sep = str(options.get('sep', ':'))
        self.steps: Sequence[int] = tuple(options.get('priority_steps', _DEFAULT_PRIORITY_STEPS))
        self.origin = f'gateway@{uuid.uuid4().hex[:8]}'

    def list_key(self, queue: str, priority: int) -> str:
        """The Redis list kombu keeps ``queue``'s messages of ``priority`` in."""
        step = self.steps[max(0, bisect.bisect(self.steps, priority) - 1)]
        return f'{queue}{self.sep}{step}' if step else queue

    def build(
        self,
        name: str,
        args: tuple[Any, ...],
        *,
        queue: str,
        priority: int,
        expires_s: float,
        group_id: str,
        group_index: int,
        argsrepr: str,
    ) -> str:
        """The JSON text of one task message, as kombu's Redis transport stores it."""
        task_id = str(uuid.uuid4())
        headers, properties, body, _ = self.app.amqp.as_task_v2(
            task_id,
            name,
            args=args,
            expires=expires_s,
            group_id=group_id,
            group_index=group_index,
            argsrepr=argsrepr,
            kwargsrepr='{}',
            ignore_result=True,
            origin=self.origin,
        )
        data = json.dumps(body).encode()
        properties.update(
            reply_to=properties.get('reply_to') or self.app.thread_oid,
            argsrepr=argsrepr,
            kwargsrepr='{}',
            delivery_mode=_DELIVERY_MODE_PERSISTENT,
            expiration=str(int(expires_s * 1000)),
            delivery_info={'exchange': '', 'routing_key': queue},
            priority=priority,
            body_encoding='base64',
            delivery_tag=str(uuid.uuid4()),
        )
        return json.dumps(
            {
                'body': base64.b64encode(data).decode('ascii'),
                'content-encoding': 'utf-8',
                'content-type': 'application/json',
                'headers': headers,
                'properties': properties,
            }
        )
