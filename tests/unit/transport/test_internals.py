"""The fast path's library internals (`judge.transport.internals`), by signature and wiring (no Redis).

Each internal the fast path uses is checked against the installed Celery, kombu and redis-py: present,
with a compatible signature, and wired into Celery.  After an upgrade, a failure here names what changed
(docs/upgrading.md); ``JUDGE_TRANSPORT=stock`` runs without any of these internals.  Their behaviour
against a real redis-server is checked in tests/integration/transport/test_internals.py."""

from __future__ import annotations

import inspect

import pytest
from kombu.utils.imports import symbol_by_name

import celeryconfig
from judge.app import app
from judge.errors import InternalsChanged
from judge.transport import internals
from judge.transport.internals import Internal
from judge.transport.internals import kombu_redis as ours
from judge.transport.internals.consumer import Consumer
from judge.transport.internals.request import Request


def test_every_internal_is_present_with_a_compatible_signature() -> None:
    assert internals.problems() == []
    internals.verify()
    assert {i.used_by for i in internals.INTERNALS} >= {
        'judge.transport.internals.kombu_redis',
        'judge.transport.internals.packed',
        'judge.transport.internals.consumer',
        'judge.transport.internals.request',
        'judge.transport.internals.envelope',
    }


def test_a_changed_internal_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    gone = Internal('kombu.transport.redis:Channel._no_such_method', 'x', 'why')
    moved = Internal('redis.connection:AbstractConnection.read_response', 'x', 'why', ('one', 'two', 'three'))
    assert 'missing' in (gone.problem() or '')
    assert 'signature' in (moved.problem() or '')
    monkeypatch.setattr(internals, 'INTERNALS', (*internals.INTERNALS, gone))
    with pytest.raises(InternalsChanged, match='_no_such_method'):
        internals.verify()


def test_the_fast_path_wires_the_overrides_into_celery() -> None:
    assert celeryconfig.broker_transport == 'judge.transport.internals.kombu_redis:Transport'
    assert celeryconfig.worker_consumer == 'judge.transport.internals.consumer:Consumer'
    conn = app.connection_for_write()
    try:
        assert type(conn.transport) is ours.Transport
    finally:
        conn.release()
    from judge.worker.tasks import run

    assert run.Request == 'judge.transport.internals.request:Request'
    assert symbol_by_name(run.Request) is Request and symbol_by_name(celeryconfig.worker_consumer) is Consumer
    # Celery still calls the hooks we override (else they would silently do nothing).
    events = inspect.getsource(__import__('celery.worker.consumer.events', fromlist=['x']))
    assert 'on_send_event_buffered' in events
    assert "send_event('task-started')" in inspect.getsource(__import__('celery.worker.request', fromlist=['x']))
