"""Every Celery, kombu and redis-py internal the fast path relies on, named in one place.

These are the only places where the judge reaches past a library's public API, each for speed that
the public API cannot give (``JUDGE_TRANSPORT=stock`` runs without any of them).  Each entry says
where it is used and how it is called; `verify` checks that the installed libraries still have it
with a compatible signature, and raises `judge.errors.InternalsChanged` naming what changed (the
fast path runs it at start-up, and ``tests/integration/transport/test_internals.py`` runs it and checks each
internal's behaviour against the library's own code on a real Redis).  After upgrading Celery,
kombu or redis-py, run those tests (docs/upgrading.md).
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from typing import Any

from judge.errors import InternalsChanged

_SELF = object()


@dataclass(frozen=True)
class Internal:
    """One internal: ``module:attribute.path``, who uses it, why, and how it is called.

    ``args``/``kwargs`` (after ``self``) must bind to its signature; ``args=None`` marks an
    attribute that is read or overridden, not called (its behaviour is covered by the contract tests).
    """

    target: str
    used_by: str
    why: str
    args: tuple[Any, ...] | None = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    def resolve(self) -> Any:
        """The object named by `target` (raises if it is gone)."""
        module_name, _, path = self.target.partition(':')
        obj: Any = importlib.import_module(module_name)
        for part in path.split('.'):
            obj = inspect.getattr_static(obj, part) if isinstance(obj, type) else getattr(obj, part)
        return obj

    def problem(self) -> str | None:
        """Why the installed library breaks this internal, or None."""
        try:
            obj = self.resolve()
        except (ImportError, AttributeError) as exc:
            return f'{self.target}: missing ({exc})'
        if self.args is None:
            return None
        func = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
        try:
            inspect.signature(func).bind(_SELF, *self.args, **self.kwargs)
        except TypeError as exc:
            return f'{self.target}: the call the judge makes no longer fits its signature ({exc})'
        except ValueError:  # no signature to inspect (a builtin): existence is all we can check
            return None
        return None


_KOMBU = 'judge.transport.internals.kombu_redis'
_REPLIES = 'judge.transport.internals.packed'
_ENVELOPE = 'judge.transport.internals.envelope'

INTERNALS: tuple[Internal, ...] = (
    Internal(
        'kombu.transport.redis:Channel._create_client',
        _KOMBU,
        'overridden: one redis-py client per pool instead of one per publish and ack',
        kwargs={'asynchronous': False},
    ),
    Internal(
        'kombu.transport.redis:Channel.pool', _KOMBU, 'the pool the reused client and packed calls borrow from', None
    ),
    Internal('kombu.transport.redis:Channel.global_keyprefix', _KOMBU, 'packed acks are skipped when it is set', None),
    Internal('kombu.transport.redis:QoS.unacked_key', _KOMBU, 'the hash the packed bookkeeping writes', None),
    Internal('kombu.transport.redis:QoS.unacked_index_key', _KOMBU, 'the ZSET the packed bookkeeping writes', None),
    Internal(
        'kombu.transport.redis:QoS.append',
        _KOMBU,
        'overridden: the unacked bookkeeping of a delivered message, as packed commands',
        ('message', 'tag'),
    ),
    Internal('kombu.transport.redis:QoS.ack', _KOMBU, 'overridden: the ack, as packed commands', ('tag',)),
    Internal(
        'kombu.transport.virtual:QoS.append',
        _KOMBU,
        'called past kombu.transport.redis.QoS once the Redis writes are done',
        ('message', 'tag'),
    ),
    Internal('kombu.transport.virtual:QoS.ack', _KOMBU, 'called past kombu.transport.redis.QoS', ('tag',)),
    Internal('kombu.message:Message.__init__', _KOMBU, 'reads the private Message._raw (the stored message)', None),
    Internal(
        'redis.connection:ConnectionPool.get_connection',
        _REPLIES,
        'a connection held for good by the packed calls (no command name: redis-py >= 6)',
        (),
    ),
    Internal('redis.connection:AbstractConnection.pack_commands', _REPLIES, 'packs a batch of commands', ([],)),
    Internal(
        'redis.connection:AbstractConnection.send_packed_command',
        _REPLIES,
        'writes the batch at once, without a health check',
        (b'',),
        {'check_health': False},
    ),
    Internal('redis.connection:AbstractConnection.read_response', _REPLIES, 'reads the replies in order', ()),
    Internal(
        'celery.worker.consumer:Consumer.on_send_event_buffered',
        'judge.transport.internals.consumer',
        'overridden (undocumented hook): coalesce event flushes',
        (),
    ),
    Internal(
        'celery.worker.consumer:Consumer._flush_events', 'judge.transport.internals.consumer', 'called to flush', ()
    ),
    Internal(
        'kombu.transport.virtual:Transport.client',
        'judge.transport.internals.guard',
        'None once Celery collected the connection: the guarded channels fail as connection errors then',
        None,
    ),
    Internal(
        'celery.worker.consumer:Consumer.ensure_connected',
        'judge.transport.internals.consumer',
        "overridden: reconnects through the connection's ensure_connection, which gets shorter intervals",
        ('conn',),
    ),
    Internal(
        'kombu.connection:Connection._ensure_connection',
        'judge.transport.internals.consumer',
        "what ensure_connection passes the intervals to (kombu's defaults: 2 s, +2 s, up to 30 s)",
        (None, None),
        {'interval_start': 0.5, 'interval_step': 0.5, 'interval_max': 2.0, 'callback': None},
    ),
    Internal(
        'celery.worker.request:Request.tzlocal', 'judge.transport.internals.request', 'overridden: looked up once', None
    ),
    Internal(
        'celery.worker.request:Request.send_event',
        'judge.transport.internals.request',
        'overridden: no task-started event',
        ('task-started',),
    ),
    Internal(
        'celery.app.amqp:AMQP.as_task_v2',
        _ENVELOPE,
        "builds protocol-2 headers and body for the gateway's own LPUSH",
        ('task-id', 'judge.run'),
        {
            'args': (),
            'expires': 1.0,
            'group_id': 'g',
            'group_index': 0,
            'argsrepr': '',
            'kwargsrepr': '{}',
            'ignore_result': True,
            'origin': 'gateway',
        },
    ),
    Internal('celery.app.base:Celery.thread_oid', _ENVELOPE, "the envelope's reply_to, as send_task sets it", None),
    Internal(
        'kombu.transport.redis:Channel._q_for_pri',
        'judge.transport.keys',
        "KeySpace.queue_list reproduces kombu's list name for a queue and priority",
        ('queue', 0),
    ),
)
"""The fast path's internals; the envelope's layout and the unacked keys' contents are checked by behaviour."""


def problems() -> list[str]:
    """What the installed libraries break among `INTERNALS` (empty when all is well)."""
    return [p for p in (i.problem() for i in INTERNALS) if p]


def verify() -> None:
    """Raise `InternalsChanged` if any internal is missing or changed."""
    found = problems()
    if found:
        raise InternalsChanged(
            'JUDGE_TRANSPORT=fast needs library internals that the installed versions changed:\n  '
            + '\n  '.join(found)
            + '\nInstall the locked versions (constraints.txt) or set JUDGE_TRANSPORT=stock.'
        )
