"""What the transport path changes in Celery's configuration (read by ``celeryconfig.py``).

``JUDGE_TRANSPORT=fast`` (the default) wires the judge's overrides into the worker:

* ``broker_transport``: `judge.transport.internals.kombu_redis.Transport` (or its Sentinel twin) instead of
  kombu's Redis transport: a reused client and packed unacked bookkeeping;
* ``worker_consumer``: `judge.transport.internals.consumer.Consumer`: coalesced event flushes;
* the task's ``Request`` class: `judge.transport.internals.request.Request`: no ``task-started`` event.

``JUDGE_TRANSPORT=stock`` leaves the consumer and the request at Celery's defaults and uses kombu's
Redis transport with one guard only (`judge.transport.internals.guard`: a worker must not stop
after a broker loss), and the gateway publishes with ``send_task`` and collects from the result
backend (`judge.transport.gateway.stockpath`).  Both paths share
the queues, the key layout and the result backend, so a cluster can switch paths one process at a
time: the worker delivers each job the way the gateway that sent it waits (`judge.contracts.Job`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from judge.settings import Settings
from judge.transport import keys
from judge.transport.connect import is_sentinel
from judge.transport.shard import Shard

CELERY_CONSUMER = 'celery.worker.consumer:Consumer'
CELERY_REQUEST = 'celery.worker.request:Request'


@dataclass(frozen=True)
class Wiring:
    """The Celery settings a transport path decides, as ``module:Class`` names.

    Names, not classes: Celery reports its configuration and connection (``inspect stats``, Flower)
    as JSON.
    """

    path: str
    broker_transport: str | None
    """A kombu transport (None: kombu's own choice from the URL)."""
    worker_consumer: str
    task_request: str


def _name(cls: type) -> str:
    return f'{cls.__module__}:{cls.__qualname__}'


def wiring(settings: Settings) -> Wiring:
    """The Celery classes of ``settings.transport``; the fast path's internals are verified first."""
    if settings.transport == 'stock':
        from judge.transport.internals import guard

        guarded = guard.SentinelTransport if is_sentinel(settings.broker_url) else guard.Transport
        return Wiring('stock', _name(guarded), CELERY_CONSUMER, CELERY_REQUEST)
    from judge.transport import internals

    internals.verify()
    from judge.transport.internals.consumer import Consumer
    from judge.transport.internals.kombu_redis import SentinelTransport, Transport
    from judge.transport.internals.request import Request

    transport = SentinelTransport if is_sentinel(settings.broker_url) else Transport
    return Wiring('fast', _name(transport), _name(Consumer), _name(Request))


def broker_transport_options(settings: Settings, visibility_timeout_s: int) -> dict[str, Any]:
    """kombu's Redis transport options: the key layout of `judge.transport.keys` and the timeouts."""
    options: dict[str, Any] = {
        # One list per queue: the queues' order is the priority (BRPOP takes from the first
        # non-empty key it names), and each BRPOP names 3 keys, not 30.
        'priority_steps': list(keys.PRIORITY_STEPS),
        'sep': keys.SEP,
        'queue_order_strategy': 'priority',
        'visibility_timeout': visibility_timeout_s,
        'unacked_restore_interval': 5,
        'unacked_restore_throttle': 1,
        'socket_timeout': settings.redis_timeout_s,
        'socket_connect_timeout': 5,
        'health_check_interval': 25,
    }
    master = Shard.from_settings(settings).address.celery_redis_options().get('master_name')
    if master:  # Redis Sentinel
        options['master_name'] = master
    return options


def result_backend_retry_policy(settings: Settings) -> dict[str, Any]:
    """Celery's Redis result backend retries (``result_backend_transport_options['retry_policy']``).

    A stock-path worker storing a result while the broker is away keeps trying for up to the outage
    window (Celery's default: 20 tries, about 20 s); the gateway's result consumer reconnects the same way.
    """
    return {
        'max_retries': None,
        'interval_start': 0,
        'interval_step': 0.5,
        'interval_max': 1,
        'timeout': settings.broker_outage_s,
    }


def redis_tls(settings: Settings) -> dict[str, Any] | None:
    """``broker_use_ssl`` / ``redis_backend_use_ssl`` for a ``rediss://`` URL (None otherwise)."""
    tls: dict[str, Any] | None = Shard.from_settings(settings).address.celery_redis_options().get('use_ssl')
    return tls
