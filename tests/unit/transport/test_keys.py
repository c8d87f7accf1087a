"""Key names, lanes and shards (`judge.transport.keys`, `judge.transport.shard`): one shard's keys and address."""

from __future__ import annotations

import pytest

from judge.settings import Settings
from judge.transport.connect import RedisAddress, sentinel_hosts
from judge.transport.gateway.lanes import Lanes
from judge.transport.keys import QUEUES, KeySpace
from judge.transport.shard import Shard


def test_key_space_names() -> None:
    keys = KeySpace()
    assert keys.reply('r1') == 'judge:reply:r1' and keys.live('r1') == 'judge:live:r1'
    assert (keys.cancelled, keys.nodes) == ('judge:cancelled', 'judge:nodes')
    assert [name for _, _, name in keys.queue_lists()] == list(QUEUES)  # one list per queue
    assert {keys.queue_list(lane.queue, lane.priority) for lane in Lanes.from_settings(Settings())} == set(QUEUES)
    other = KeySpace(prefix='j2:', priority_steps=(0, 3, 6, 9))
    assert other.reply('r') == 'j2:reply:r' and other.queue_list('q', 7) == 'q:6' and other.queue_list('q', 2) == 'q'
    assert len(other.queue_lists()) == 4 * len(QUEUES)
    assert keys.request_patterns() == ('judge:reply:*', 'judge:live:*')


def test_lanes_rank_single_over_batch_over_long() -> None:
    lanes = Lanes.from_settings(Settings())
    order = [lanes.single, lanes.batch, lanes.long]
    assert [lane.queue for lane in order] == list(QUEUES)  # the order the worker takes from them
    assert [lane.priority for lane in order] == sorted(lane.priority for lane in order)  # 0 is the highest on Redis


def test_a_shard_is_an_object_with_its_own_address_and_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('REDIS_URI', 'rediss://h:6380/2')
    monkeypatch.setenv('JUDGE_REDIS_TLS_CA_FILE', '/ca.pem')
    shard = Shard.from_settings(Settings())
    assert shard.address.url == 'rediss://h:6380/2' and shard.keys == KeySpace()
    assert shard.address.tls_options() == {'ssl_cert_reqs': 'required', 'ssl_ca_certs': '/ca.pem'}
    assert 'use_ssl' in shard.address.celery_redis_options()
    second = Shard(RedisAddress('redis://other:6379/0'), KeySpace(prefix='s2:'), name='s2')
    assert second.keys.reply('x') != shard.keys.reply('x') and repr(second) == "Shard('s2')"
    assert sentinel_hosts('sentinel://a:1;sentinel://b/3') == ([('a', 1), ('b', 26379)], 3)
