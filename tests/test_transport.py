"""`judge.transport` owns the plumbing: ownership rules, key names, the job payload, entry points."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from judge.contracts import Submission
from judge.settings import Settings
from judge.transport.connect import RedisAddress, sentinel_hosts
from judge.transport.keys import QUEUES, KeySpace
from judge.transport.lanes import Lanes
from judge.transport.shard import Shard
from judge.worker.cli import worker_argv
from judge.worker.tasks import as_job

ROOT = Path(__file__).resolve().parent.parent
OUTSIDE = [
    p
    for p in [*ROOT.joinpath('judge').rglob('*.py'), *ROOT.joinpath('api').glob('*.py'), ROOT / 'celeryconfig.py']
    if 'transport' not in p.parts
]
# Redis key names and kombu's internal names: written only in judge/transport.
_KEY_LITERAL = re.compile(r'^(judge:(reply|live|cancelled|nodes|inflight|gateways)|_kombu\.|unacked)')


def _tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text(), str(path))


def test_only_the_transport_imports_redis_or_kombu_transports() -> None:
    for path in OUTSIDE:
        for node in ast.walk(_tree(path)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split('.')[0] != 'redis', f'{path.relative_to(ROOT)} imports {name}'
                assert not name.startswith(('kombu.transport', 'celery.worker')), f'{path.relative_to(ROOT)}: {name}'


def test_no_redis_key_names_outside_the_transport() -> None:
    for path in [*OUTSIDE, *ROOT.joinpath('toolkit').rglob('*.py')]:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not _KEY_LITERAL.match(node.value), f'{path.relative_to(ROOT)}: {node.value!r}'


def test_no_private_library_names_outside_the_transport() -> None:
    """Outside judge/transport (and the sandbox, which uses no library), no ``x._private`` of another object."""
    mine = [p for p in OUTSIDE if not {'sandbox', 'executors'} & set(p.parts)]
    for path in mine:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Attribute) and node.attr.startswith('_') and not node.attr.startswith('__'):
                owner = node.value
                assert isinstance(owner, ast.Name) and owner.id in ('self', 'cls'), (
                    f'{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}'
                )


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


def test_the_job_carries_the_payload_and_where_to_answer() -> None:
    payload = Submission.model_validate({'type': 'python', 'solution': 'print(1)', 'options': {'x': 'y'}}).payload()
    assert set(payload) == {'sub_id', 'type', 'solution', 'input', 'expected_output'}  # options stay home
    job = {'sub': payload, 'reply_to': 'judge:reply:r', 'index': 2, 'batch': 'b'}
    assert as_job((job,)) == job
    # A message queued by the previous release: (sub, reply_to, index, batch).
    assert as_job((payload, 'judge:reply:r', 2, 'b')) == job
    assert as_job((payload, 'judge:reply:r', 2)) == {**job, 'batch': ''}
    assert as_job(()) is None and as_job(('x',)) is None


def test_worker_command_defaults() -> None:
    assert worker_argv([]) == ['worker', '-P', 'prefork', '--without-gossip', '--without-mingle', '-n', 'judge@%h']
    assert worker_argv(['-n', 'a@%h', '-c', '4'])[-4:] == ['-n', 'a@%h', '-c', '4']
    assert worker_argv(['--hostname=x@%h']).count('-n') == 0
