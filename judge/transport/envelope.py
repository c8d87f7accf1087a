"""Celery task messages, ready to be written straight onto a Redis broker list (the fast publish).

INTERNAL (see `judge.transport.internals`): the message body and headers come from Celery's
``app.amqp.as_task_v2`` (protocol 2), and the wrapping reproduces what kombu's Redis transport
stores (JSON body in base64, ``delivery_info``, ``delivery_tag``, the per-priority list of
`judge.transport.keys.KeySpace.queue_list`).  ``tests/test_transport_contract.py`` checks the result
field by field against a message that Celery and kombu wrote themselves.

Celery's own publish path (``send_task`` → kombu ``Producer.publish``) is synchronous and does much
bookkeeping around one ``LPUSH``; this builds the same text so that the gateway can push a whole
batch with one pipelined ``LPUSH`` per slice on its asyncio client.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

from celery import Celery

_DELIVERY_MODE_PERSISTENT = 2


class Envelopes:
    """Builds broker messages for one Celery app."""

    def __init__(self, app: Celery) -> None:
        self.app = app
        self.origin = f'gateway@{uuid.uuid4().hex[:8]}'

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
