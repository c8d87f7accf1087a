"""Celery task messages, ready to be written straight onto a Redis broker list (the fast publish).

INTERNAL (see `judge.transport.internals`): the message body and headers come from Celery's
``app.amqp.as_task_v2`` (protocol 2), and the wrapping reproduces what kombu's Redis transport
stores (JSON body in base64, ``delivery_info``, ``delivery_tag``, the per-priority list of
`judge.transport.keys.KeySpace.queue_list`).  ``tests/integration/transport/test_internals.py`` checks the result
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


_PER_TASK = ('id', 'root_id', 'group_index', 'argsrepr')
"""The headers `Envelopes.build` sets per message; the rest are the same for a whole request."""


class Envelopes:
    """Builds broker messages for one Celery app.

    Celery's ``as_task_v2`` runs once per request (the same name, queue, priority, expiry and group):
    each message of the request is that one's headers and properties with its own task id, index,
    ``argsrepr`` and delivery tag, and its own body.
    """

    def __init__(self, app: Celery) -> None:
        self.app = app
        self.origin = f'gateway@{uuid.uuid4().hex[:8]}'
        self._key: tuple[Any, ...] | None = None
        self._template: tuple[dict[str, Any], dict[str, Any], dict[str, Any]] = ({}, {}, {})

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
        key = (name, queue, priority, expires_s, group_id)
        if key != self._key:
            self._template = self._request_template(name, queue, priority, expires_s, group_id)
            self._key = key
        common_headers, common_properties, embed = self._template
        task_id = str(uuid.uuid4())
        headers = {
            **common_headers,
            'id': task_id,
            'root_id': task_id,
            'group_index': group_index,
            'argsrepr': argsrepr,
        }
        properties = {
            **common_properties,
            'correlation_id': task_id,
            'argsrepr': argsrepr,
            'delivery_tag': str(uuid.uuid4()),
        }
        data = json.dumps((args, {}, embed)).encode()
        return json.dumps(
            {
                'body': base64.b64encode(data).decode('ascii'),
                'content-encoding': 'utf-8',
                'content-type': 'application/json',
                'headers': headers,
                'properties': properties,
            }
        )

    def _request_template(
        self, name: str, queue: str, priority: int, expires_s: float, group_id: str
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        """Headers, properties and the body's third part shared by one request's messages."""
        headers, properties, body, _ = self.app.amqp.as_task_v2(
            '',
            name,
            args=(),
            expires=expires_s,
            group_id=group_id,
            group_index=0,
            argsrepr='',
            kwargsrepr='{}',
            ignore_result=True,
            origin=self.origin,
        )
        properties.update(
            reply_to=properties.get('reply_to') or self.app.thread_oid,
            kwargsrepr='{}',
            delivery_mode=_DELIVERY_MODE_PERSISTENT,
            expiration=str(int(expires_s * 1000)),
            delivery_info={'exchange': '', 'routing_key': queue},
            priority=priority,
            body_encoding='base64',
        )
        if body[1] != {} or set(_PER_TASK) - set(headers):
            raise RuntimeError(f'unexpected Celery task message layout: {headers!r} {body!r}')
        return headers, properties, body[2]
