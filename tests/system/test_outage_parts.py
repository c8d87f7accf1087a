"""The parts that ride out a broker outage, each against a real redis-server that is killed and restarted.

* `BrokerHealth` (gateway): waits for the broker, gives up after the outage window, counts outages;
* `Replies.push` (worker): holds a result until the broker is back;
* the guarded kombu channels of both paths: a channel used after its connection was collected
  raises a connection error (which Celery ignores), where kombu's own raises ``AttributeError``
  (which stops the worker).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
from kombu import Connection
from kombu.transport import redis as kombu_redis

from judge.results import internal_error
from judge.transport.connect import RedisAddress
from judge.transport.gateway.outage import BrokerHealth, is_broker_fault
from judge.transport.internals import guard
from judge.transport.internals import kombu_redis as ours
from judge.transport.shard import Shard
from judge.transport.worker.replies import Replies
from tests.support.processes.services import Service, start_redis

pytestmark = pytest.mark.integration


@dataclass
class Server:
    log_dir: Path
    svc: Service
    port: int

    @property
    def url(self) -> str:
        return f'redis://127.0.0.1:{self.port}/0'

    def kill(self) -> None:
        self.svc.proc.kill()
        self.svc.proc.wait(10)

    restarts: list[threading.Timer] = field(default_factory=list)

    def restart(self) -> None:
        self.svc, _ = start_redis(self.log_dir, self.port)

    def restart_in(self, delay_s: float) -> None:
        """Start Redis again on the same port after ``delay_s`` (the fixture waits for it before stopping
        Redis: a restart still under way when a test ends would leave its Redis running)."""
        timer = threading.Timer(delay_s, self.restart)
        self.restarts.append(timer)
        timer.start()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    svc, port = start_redis(tmp_path)
    srv = Server(tmp_path, svc, port)
    try:
        yield srv
    finally:
        for timer in srv.restarts:
            timer.join()
        srv.svc.stop()


class _Seen:
    """An `OutageObserver` that remembers what it was told."""

    def __init__(self) -> None:
        self.outages: list[float] = []
        self.counts: list[int] = []

    def reconnected(self, shard: str, outage_s: float) -> None:
        self.outages.append(outage_s)

    def republished(self, shard: str, n: int) -> None:
        self.counts.append(n)


def test_health_waits_for_the_broker_and_gives_up_after_the_window(server: Server) -> None:
    async def scenario() -> dict[str, object]:
        shard = Shard(RedisAddress(server.url), timeout_s=1.0)
        health = BrokerHealth(shard, outage_s=2.0)
        loop = asyncio.get_running_loop()
        out: dict[str, object] = {'no outage': await health.wait_until_back('data lost', loop.time() + 5)}
        out['outages before'] = health.outages
        server.kill()
        t0 = loop.time()
        out['first'] = await health.wait_until_back('refused', loop.time() + 30)  # the 2 s window comes first
        out['first waited'] = loop.time() - t0
        out['down'] = health.describe()
        out['unreachable'] = health.unreachable()
        t1 = loop.time()
        out['late'] = await health.wait_until_back('refused', loop.time() + 30)  # the same outage: at once
        out['late waited'] = loop.time() - t1
        server.restart()
        while not health.up and loop.time() - t1 < 10:
            await asyncio.sleep(0.05)
        out['after'] = health.describe()
        await shard.aclose()
        return out

    out = asyncio.run(scenario())
    assert out['no outage'] is True and out['outages before'] == 0, out
    assert out['first'] is False and 1.8 < float(out['first waited']) < 4, out  # type: ignore[arg-type]
    assert out['late'] is False and float(out['late waited']) < 0.5, out  # type: ignore[arg-type]
    assert out['down']['state'] == 'unreachable', out  # type: ignore[index]
    assert 'was unreachable for' in str(out['unreachable']), out
    assert out['after']['state'] == 'ok' and out['after']['outages'] == 1, out  # type: ignore[index]


def test_health_counts_an_outage_and_advances_its_epoch(server: Server) -> None:
    async def scenario() -> tuple[bool, int, int, list[float], dict[str, object]]:
        shard = Shard(RedisAddress(server.url), timeout_s=1.0)
        seen = _Seen()
        health = BrokerHealth(shard, outage_s=30.0, observer=seen)
        loop = asyncio.get_running_loop()
        epoch = health.epoch
        server.kill()
        server.restart_in(1.0)
        back = await health.wait_until_back('refused', loop.time() + 30)
        health.count_republished(7)
        await shard.aclose()
        return back, epoch, health.epoch, seen.outages, health.describe() | {'counts': seen.counts}

    back, before, after, outages, view = asyncio.run(scenario())
    assert back and after == before + 1
    assert len(outages) == 1 and 0.5 < outages[0] < 10, outages
    assert view['state'] == 'ok' and view['outages'] == 1 and view['republished'] == 7, view
    assert view['counts'] == [7], view


def test_a_result_waits_for_the_broker(server: Server) -> None:
    shard = Shard(RedisAddress(server.url), timeout_s=1.0)
    replies = Replies(shard, ttl_s=60, hold_s=30)
    replies.push('judge:reply:held', 0, internal_error('s', 'warm-up'))  # the packed connection is held now
    server.kill()
    server.restart_in(1.5)
    t0 = time.monotonic()
    replies.push('judge:reply:held', 3, internal_error('s', 'computed during the outage'))
    took = time.monotonic() - t0
    items = [json.loads(x) for x in redis.Redis.from_url(server.url).lrange('judge:reply:held', 0, -1)]
    assert [i for i, _ in items] == [3], items  # the restarted Redis is empty: only the held result
    assert 1.0 < took < 10, took


def test_a_result_gives_up_at_its_deadline(server: Server) -> None:
    shard = Shard(RedisAddress(server.url), timeout_s=1.0)
    replies = Replies(shard, ttl_s=60, hold_s=30)
    server.kill()
    t0 = time.monotonic()
    with pytest.raises(redis.ConnectionError):
        replies.push('judge:reply:lost', 0, internal_error('s', 'x'), until=time.monotonic() + 1.0)
    assert time.monotonic() - t0 < 3
    assert is_broker_fault(redis.ConnectionError('refused')) and not is_broker_fault(ValueError('bug'))


def _collected_channel(url: str, kind: type) -> object:
    """A channel whose pool was dropped and whose connection Celery has collected (a broker loss)."""
    conn = Connection(url, transport=kind)
    channel = conn.default_channel
    channel._pool = None  # kombu drops the pools when it closes the channel
    conn._do_close_transport()  # what Connection.collect() does: the transport forgets its connection
    return channel


@pytest.mark.parametrize('kind', [ours.Transport, guard.Transport], ids=['fast', 'stock'])
def test_a_collected_channel_fails_as_a_connection_error(server: Server, kind: type) -> None:
    channel = _collected_channel(server.url, kind)
    with pytest.raises(redis.ConnectionError), channel.conn_or_acquire():  # type: ignore[attr-defined]
        pass
    with pytest.raises(redis.ConnectionError):  # a late ack of a message it delivered
        channel.qos.ack('a-delivery-tag')  # type: ignore[attr-defined]


def test_kombus_own_channel_fails_with_an_attribute_error(server: Server) -> None:
    kombus = _collected_channel(server.url, kombu_redis.Transport)  # unguarded
    with pytest.raises(AttributeError), kombus.conn_or_acquire():  # type: ignore[attr-defined]
        pass  # kombu's own: why both paths guard it (if this starts failing, kombu fixed it)
