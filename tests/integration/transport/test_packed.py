"""`judge.transport.internals.packed` and the broker's QoS built on it, against a real redis-server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from kombu import Connection

from judge.transport.internals.packed import PackedCalls, transaction_ran
from tests.support.processes.services import Service, start_redis


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Service, int]]:
    svc, port = start_redis(tmp_path)
    try:
        yield svc, port
    finally:
        svc.stop()


def test_replies_in_order_on_one_connection(server: tuple[Service, int]) -> None:
    client = redis.Redis(port=server[1])
    calls = PackedCalls(lambda: client.connection_pool)
    replies = calls.call([('RPUSH', 'k', 'a'), ('RPUSH', 'k', 'b'), ('EXPIRE', 'k', 100), ('LRANGE', 'k', 0, -1)])
    assert replies == [1, 2, True, [b'a', b'b']]
    before = client.client_list()
    assert calls.call([('LLEN', 'k')]) == [2]
    assert len(client.client_list()) == len(before)  # the same held connection, not a new one


def test_an_error_reply_falls_back_and_the_next_call_is_in_step(server: tuple[Service, int]) -> None:
    client = redis.Redis(port=server[1])
    client.set('s', 'x')
    calls = PackedCalls(lambda: client.connection_pool)
    assert calls.call([('RPUSH', 's', 'a'), ('GET', 's')]) is None  # WRONGTYPE: use the slow path
    assert calls.call([('GET', 's'), ('STRLEN', 's')]) == [b'x', 1]  # not the reply left over


def test_a_restarted_redis_falls_back_once_then_reconnects(tmp_path: Path) -> None:
    svc, port = start_redis(tmp_path)
    try:
        client = redis.Redis(port=port)
        calls = PackedCalls(lambda: client.connection_pool)
        assert calls.call([('SET', 'k', 'v')]) == [b'OK']  # raw replies: no redis-py callbacks
        svc.stop()
        assert calls.call([('GET', 'k')]) is None  # down: never raises, the caller falls back
        svc, _ = start_redis(tmp_path, port)
        assert calls.call([('SET', 'k', 'w'), ('GET', 'k')]) == [b'OK', b'w']
    finally:
        svc.stop()


def test_broker_qos_records_and_forgets_unacked_messages(server: tuple[Service, int]) -> None:
    """Our transport's append/ack leave Redis exactly as kombu's own bookkeeping does."""
    client = redis.Redis(port=server[1])
    url = f'redis://127.0.0.1:{server[1]}/0'
    with Connection(url, transport='judge.transport.internals.kombu_redis:Transport') as conn:
        queue = conn.SimpleQueue('packed-test')
        queue.put({'n': 1})
        message = queue.get(timeout=5)
        tag = message.delivery_tag
        assert client.zscore('unacked_index', tag) is not None
        raw = client.hget('unacked', tag)
        assert raw is not None and b'packed-test' in raw  # the message, its exchange and routing key
        message.ack()
        assert client.zscore('unacked_index', tag) is None
        assert client.hget('unacked', tag) is None
        queue.close()


def test_transaction_ran_sees_errors_inside_exec(server: tuple[Service, int]) -> None:
    client = redis.Redis(port=server[1])
    client.set('s', 'x')
    calls = PackedCalls(lambda: client.connection_pool)
    good = calls.call([('MULTI',), ('SET', 'a', '1'), ('EXEC',)])
    bad = calls.call([('MULTI',), ('RPUSH', 's', 'v'), ('SET', 'b', '2'), ('EXEC',)])  # WRONGTYPE, inside EXEC
    assert good is not None and transaction_ran(good)
    assert bad is not None and not transaction_ran(bad)
    assert not transaction_ran([b'OK', None])  # EXEC aborted
