"""Celery settings (lowercase names only), derived from `judge.settings`.

Gateway and workers must share these: the same `sep`, `priority_steps` and serializer, or
messages and priorities break (docs/transport.md).  What the transport path (``JUDGE_TRANSPORT``)
changes comes from `judge.transport.config`.
"""

from __future__ import annotations

from kombu import Queue

from judge.settings import get_settings
from judge.transport import config as transport
from judge.transport.keys import PRIORITY_BATCH, QUEUE_BATCH, QUEUES

_s = get_settings()
_wiring = transport.wiring(_s)

# One broker shard (JUDGE_BROKER_SHARDS, JUDGE_WORKER_SHARD; REDIS_URI when there is one): a worker
# consumes from it and answers through it.  The gateway builds one app per shard (judge.transport.gateway.router).
broker_url = _s.broker_url
# fast: judge.transport.internals.kombu_redis.Transport (a reused client, packed acks); stock: kombu's own.
broker_transport = _wiring.broker_transport
# The stock path's answers; the fast path answers on per-request reply lists and stores nothing here.
result_backend = _s.broker_url
result_expires = _s.reply_ttl_s
broker_connection_retry_on_startup = True
broker_connection_max_retries = None
broker_pool_limit = 32

task_serializer = 'json'
result_serializer = 'json'
accept_content = ['json']
task_compression = None

# One process per slot; fair distribution and working priorities need prefetch 1 + late acks.
worker_concurrency = _s.max_workers
worker_prefetch_multiplier = 1
worker_disable_rate_limits = True  # no rate limits are used: skip the per-task token-bucket check
task_acks_late = True
task_acks_on_failure = True
task_acks_on_timeout = True
# A pool process that dies mid-task (kill -9, OOM) retries the task a bounded number of times
# (`max_retries` on the task), instead of requeueing a poison submission forever.
task_reject_on_worker_lost = False
worker_max_tasks_per_child = 10000
worker_pool_restarts = True
worker_send_task_events = _s.task_events
task_send_sent_event = False
worker_hijack_root_logger = False
worker_redirect_stdouts = False
# fast: judge.transport.internals.consumer.Consumer (coalesced event flushes); stock: Celery's.
worker_consumer = _wiring.worker_consumer

task_soft_time_limit = _s.task_soft_time_limit_s
task_time_limit = _s.task_time_limit_s

task_default_queue = QUEUE_BATCH
task_default_priority = PRIORITY_BATCH  # Redis: an unset priority would be 0 = the highest
task_create_missing_queues = True
# `celery -A judge worker` consumes all three, checked in this order (queue_order_strategy).
task_queues = tuple(Queue(name, routing_key=name) for name in QUEUES)

# A node that vanishes gives its unacked tasks back after this; it must exceed the longest
# execution of one task (compile + run + margin), or a slow task would run twice.
visibility_timeout = int(_s.visibility_timeout_s or max(120, 2 * _s.task_time_limit_s))
broker_transport_options = transport.broker_transport_options(_s, visibility_timeout)
result_backend_transport_options = {
    **{k: v for k, v in broker_transport_options.items() if k == 'master_name'},
    # A result computed while the broker is away is stored once it is back (docs/reliability.md).
    'retry_policy': transport.result_backend_retry_policy(_s),
}
redis_socket_timeout = _s.redis_timeout_s  # the result backend's clients (Celery's default: 120 s)
redis_socket_connect_timeout = 5
# Storing a stock-path result retries its whole operation (Celery's own read-before-write included)
# for about the outage window, with 0.1 s to 1 s of jittered backoff.
result_backend_always_retry = True
result_backend_max_retries = int(2 * _s.broker_outage_s)
result_backend_base_sleep_between_retries_ms = 100
result_backend_max_sleep_between_retries_ms = 1000
# A worker that loses the broker keeps running its tasks and delivers their results once it is back
# (Celery 6 means to make True the default, which would throw those results away).
worker_cancel_long_running_tasks_on_connection_loss = False
_tls = transport.redis_tls(_s)
if _tls:  # rediss:// with verified certificates
    broker_use_ssl = _tls
    redis_backend_use_ssl = _tls
