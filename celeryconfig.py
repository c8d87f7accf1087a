"""Celery settings (lowercase names only), derived from `judge.settings`.

Gateway and workers must share these: the same `sep`, `priority_steps` and serializer, or
messages and priorities break (see celery.md).
"""

from __future__ import annotations

from kombu import Queue

from judge.contracts import PRIORITY_BATCH, QUEUE_BATCH, QUEUE_LONG, QUEUE_RUN
from judge.redisconn import celery_broker_options, is_sentinel
from judge.settings import get_settings

_s = get_settings()
_broker = celery_broker_options(_s)

broker_url = _s.redis_uri
# kombu's Redis transport minus a redis-py client built per publish and per ack (see judge/broker.py)
broker_transport = 'judge.broker:SentinelTransport' if is_sentinel(_s.redis_uri) else 'judge.broker:Transport'
result_backend = None  # submissions reply on per-request lists, never through the result backend
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

task_soft_time_limit = _s.task_soft_time_limit_s
task_time_limit = _s.task_time_limit_s

task_default_queue = QUEUE_BATCH
task_default_priority = PRIORITY_BATCH  # Redis: an unset priority would be 0 = the highest
task_create_missing_queues = True
# `celery -A judge worker` consumes all three, checked in this order (queue_order_strategy).
task_queues = tuple(Queue(name, routing_key=name) for name in (QUEUE_RUN, QUEUE_BATCH, QUEUE_LONG))

# A node that vanishes gives its unacked tasks back after this; it must exceed the longest
# execution of one task (compile + run + margin), or a slow task would run twice.
_visibility_timeout_s = int(_s.visibility_timeout_s or max(120, 2 * _s.task_time_limit_s))
broker_transport_options = {
    # One list per queue: the queues' order above is the priority (BRPOP takes from the first
    # non-empty key it names).  Each BRPOP then names 3 keys, not 30 (one per priority step and
    # queue); the worker re-issues it after every message, and packing 30 keys was ~10% of its
    # main process.  Messages still carry their priority (1/4/7), unused by this transport.
    'priority_steps': [0],
    'sep': ':',
    'queue_order_strategy': 'priority',
    'visibility_timeout': _visibility_timeout_s,
    'unacked_restore_interval': 5,
    'unacked_restore_throttle': 1,
    'socket_timeout': 30,
    'socket_connect_timeout': 5,
    'health_check_interval': 25,
}
if 'master_name' in _broker:  # Redis Sentinel
    broker_transport_options['master_name'] = _broker['master_name']
if 'broker_use_ssl' in _broker:  # rediss:// with verified certificates
    broker_use_ssl = _broker['broker_use_ssl']
visibility_timeout = _visibility_timeout_s

# Task events are coalesced into one publish per 50 ms (see judge/consumer.py).
worker_consumer = 'judge.consumer:Consumer'
