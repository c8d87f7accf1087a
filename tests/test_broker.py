"""The broker transport (judge/broker.py): one reusable redis-py client per pool, on a real Redis."""

from __future__ import annotations

import uuid

from kombu import Connection

import celeryconfig
from judge import broker
from tests.conftest import Stack


def test_celery_uses_the_reusing_transport() -> None:
    assert celeryconfig.broker_transport == 'judge.broker:Transport'


def test_publish_and_ack_share_one_client_until_the_pool_is_replaced(stack: Stack) -> None:
    with Connection(stack.redis_url, transport=celeryconfig.broker_transport) as conn:
        channel = conn.default_channel
        assert isinstance(channel, broker.Channel)
        with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
            assert first is second
        channel._pool = None  # what kombu does when it reconnects
        with channel.conn_or_acquire() as third:
            assert third is not first
            assert third.connection_pool is channel.pool

        queue = conn.SimpleQueue(f'test-broker-{uuid.uuid4().hex}')
        try:
            queue.put({'n': 1})
            message = queue.get(timeout=5)
            assert message.payload == {'n': 1}
            tag = message.delivery_tag
            with channel.conn_or_acquire() as client:
                assert client.hexists(channel.unacked_key, tag)
                message.ack()
                assert not client.hexists(channel.unacked_key, tag)
        finally:
            queue.queue.delete()
            queue.close()
