"""Thin Celery tasks: one submission per task; the answer goes to the request's reply list.

Acks, retries and time limits are set here and in `celeryconfig.py`; judging itself lives in
`judge.runner`.  Each pool process owns one sandbox slot (a slot server) for its whole life.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import traceback
from typing import Any

import redis
from celery import Task, signals
from celery.exceptions import SoftTimeLimitExceeded

from judge.app import app
from judge.contracts import CANCELLED_KEY, NODE_INFO_KEY, RUN_TASK, Verdict, infra_failure
from judge.error_cases import ErrorCaseWriter, should_save
from judge.executors import EXECUTORS, Toolchain
from judge.packedcalls import PackedCalls
from judge.redisconn import sync_client
from judge.runner import Runner, RunnerConfig
from judge.sandbox.client import SandboxError, SlotClient, SlotConfig
from judge.sandbox.slots import claim_slot
from judge.settings import Settings, get_settings

logger = logging.getLogger('judge.tasks')

_MAX_WORKER_LOST_RETRIES = 2

"""ZSET of reply keys whose client went away (score: expiry, epoch seconds); written by the gateway."""
_CANCEL_POLL_S = 0.25


class _Cancelled:
    """This process's copy of `CANCELLED_KEY`, refreshed at most every `_CANCEL_POLL_S` seconds."""

    keys: frozenset[str] = frozenset()
    next_poll: float = 0.0


def is_cancelled(reply_to: str) -> bool:
    """Whether the request behind ``reply_to`` was abandoned by its client.

    One Redis round trip (~30 us CPU) per process at most every 0.25 s, whatever the task rate;
    otherwise a set lookup.  A Redis error keeps the previous copy: never fail a submission over it.
    """
    now = time.monotonic()
    if now >= _Cancelled.next_poll:
        _Cancelled.next_poll = now + _CANCEL_POLL_S
        try:
            members = _redis().zrangebyscore(CANCELLED_KEY, time.time(), '+inf')
        except redis.RedisError as exc:
            logger.warning('could not read %s: %s', CANCELLED_KEY, exc)
        else:
            _Cancelled.keys = frozenset(m.decode() if isinstance(m, bytes) else str(m) for m in members)
    return reply_to in _Cancelled.keys


class _Slot:
    """This process's sandbox slot, runner and Redis connection (created lazily)."""

    runner: Runner | None = None
    client: SlotClient | None = None
    redis: redis.Redis | None = None
    packed: PackedCalls | None = None
    lock_fd: int | None = None
    node_name: str | None = None
    error_cases: ErrorCaseWriter | None = None


def _cache_dir(settings: Settings) -> str:
    path = settings.cache_dir
    try:
        os.makedirs(path, mode=0o755, exist_ok=True)
        if os.access(path, os.W_OK):
            return path
    except OSError:
        pass
    fallback = os.path.join(settings.work_root, 'cache')
    os.makedirs(fallback, mode=0o755, exist_ok=True)
    return fallback


def build_runner(settings: Settings) -> Runner:
    """Start this process's slot server and its runner."""
    index, fd = claim_slot()
    _Slot.lock_fd = fd
    cache_dir = _cache_dir(settings)
    pch_dir = os.path.join(cache_dir, 'pch')  # the compiler reads the PCH; nothing else in the cache is readable
    os.makedirs(pch_dir, mode=0o755, exist_ok=True)
    client = SlotClient(
        SlotConfig(
            slot=index,
            python=settings.python_executor_path,
            tier=settings.sandbox_tier,
            allow_unsafe=settings.allow_unsafe,
            work_root=settings.work_root,
            uid_base=settings.slot_uid_base,
            extra={
                'memory_mb': settings.max_memory,
                'pids': settings.pids_limit,
                'keep_writable': [cache_dir],
                'read_paths': [pch_dir],
                'preload': [m.strip() for m in settings.python_preload.split(',') if m.strip()],
                'cpus': settings.slot_cpus,
                'renew_execs': settings.warm_renew_execs,
                'renew_s': settings.warm_renew_s,
            },
        )
    )
    client.ensure_started()
    _Slot.client = client
    toolchain = Toolchain(
        python=settings.python_executor_path,
        cxx=settings.cpp_compiler_path,
        python_mode=settings.python_mode,
        cache_dir=cache_dir,
        compile_time_s=settings.compile_time_limit,
        compile_memory_mb=settings.compile_memory_mb,
    )
    config = RunnerConfig(
        time_s=settings.max_execution_time,
        memory_mb=settings.max_memory,
        output_limit_bytes=settings.output_limit_mb * 1024 * 1024,
        file_limit_bytes=settings.file_size_limit_mb * 1024 * 1024,
        pids=settings.pids_limit,
        max_chars=settings.max_stdout_error_length,
    )
    return Runner(toolchain, client, config)


def _runner() -> Runner:
    if _Slot.runner is None:
        _Slot.runner = build_runner(get_settings())
    return _Slot.runner


def _redis() -> redis.Redis:
    if _Slot.redis is None:
        _Slot.redis = sync_client(get_settings(), socket_timeout=30)
    return _Slot.redis


def push_reply(reply_to: str, index: int, result: dict[str, Any]) -> None:
    """Append ``[index, result]`` to the request's reply list (the gateway de-duplicates).

    Packed commands on this process's held connection; redis-py's pipeline (with its retries) if
    that fails.
    """
    item = json.dumps([index, result], separators=(',', ':'))
    ttl_s = get_settings().reply_ttl_s
    if _Slot.packed is None:
        client = _redis()
        _Slot.packed = PackedCalls(lambda: client.connection_pool)
    if _Slot.packed.call([('RPUSH', reply_to, item), ('EXPIRE', reply_to, ttl_s)]) is not None:
        return
    pipe = _redis().pipeline(transaction=False)
    pipe.rpush(reply_to, item)
    pipe.expire(reply_to, ttl_s)
    pipe.execute()


def save_error_case(sub: dict[str, Any], result: dict[str, Any], failure: str | None = None) -> None:
    """Queue a failed submission for `ERROR_CASE_SAVE_PATH` (never blocks, never raises)."""
    settings = get_settings()
    if not settings.error_case_save_path or not should_save(result):
        return
    if _Slot.error_cases is None:
        _Slot.error_cases = ErrorCaseWriter(settings.error_case_save_path, settings.error_case_budget_mb * 1024 * 1024)
    _Slot.error_cases.submit(sub, result, failure)


def internal_error(sub: dict[str, Any], message: str, cost_s: float = 0.0) -> dict[str, Any]:
    """An `internal_error` result: never scored as a wrong answer."""
    return infra_failure(sub.get('sub_id') or '', Verdict.INTERNAL_ERROR, cost_s, message)


@app.task(
    name=RUN_TASK,
    Request='judge.request:Request',
    bind=True,
    ignore_result=True,
    acks_late=True,
    retry_on_worker_lost=True,
    max_retries=_MAX_WORKER_LOST_RETRIES,
    default_retry_delay=0,
)
def run(self: Task, sub: dict[str, Any], reply_to: str, index: int, batch_id: str = '') -> None:
    """Judge one submission and push its result to ``reply_to``."""
    start = time.monotonic()
    if is_cancelled(reply_to):
        logger.info('sub_id=%s batch=%s: skipped, its client went away', sub.get('sub_id'), batch_id)
        return
    log = get_settings().log_submissions  # off by default: Flower already shows every task
    if log:
        logger.info(
            'start sub_id=%s batch=%s pid=%d retries=%d', sub.get('sub_id'), batch_id, os.getpid(), self.request.retries
        )
    failure: str | None = None
    try:
        result = _runner().run(sub)
    except SoftTimeLimitExceeded:
        failure = traceback.format_exc()
        result = internal_error(sub, 'the task exceeded its soft time limit', time.monotonic() - start)
        if _Slot.client is not None:
            _Slot.client.close()  # the slot server may be stuck: start a fresh one next time
    except (SandboxError, OSError, ValueError) as exc:
        logger.exception('sub_id=%s batch=%s: infrastructure failure', sub.get('sub_id'), batch_id)
        failure = traceback.format_exc()
        result = internal_error(sub, f'{type(exc).__name__}: {exc}', time.monotonic() - start)
    push_reply(reply_to, index, result)
    save_error_case(sub, result, failure)
    if log:
        logger.info(
            'sub_id=%s batch=%s type=%s verdict=%s cost=%.4fs elapsed=%.4fs',
            sub.get('sub_id'),
            batch_id,
            sub.get('type'),
            result.get('verdict'),
            result.get('cost', 0.0),
            time.monotonic() - start,
        )


@signals.task_failure.connect
def _on_failure(
    sender: Any = None,
    task_id: str | None = None,
    exception: BaseException | None = None,
    args: Any = None,
    kwargs: Any = None,
    **_: Any,
) -> None:
    """A task that died for good (hard time limit, pool process lost too often) still answers."""
    if getattr(sender, 'name', None) != RUN_TASK:
        return
    call = dict(kwargs or {})
    if args:
        for name, value in zip(('sub', 'reply_to', 'index', 'batch_id'), args, strict=False):
            call.setdefault(name, value)
    if 'reply_to' not in call or 'index' not in call:
        return
    sub = call.get('sub') or {}
    logger.error('sub_id=%s task %s failed: %r', sub.get('sub_id'), task_id, exception)
    result = internal_error(sub, f'task failed: {exception!r}')
    try:
        push_reply(call['reply_to'], int(call['index']), result)
    except redis.RedisError:
        logger.exception('could not report the failure of task %s', task_id)
    save_error_case(sub, result, repr(exception))


def _publish_node_info(runner: Runner) -> None:
    client = runner.slot
    info = {
        'tier': client.tier,
        'sandbox': client.detail,
        'python_mode': runner.toolchain.python_mode,
        'toolchains': {lang: runner.executor(lang).version() for lang in EXECUTORS},
        'updated_at': time.time(),
    }
    _redis().hset(NODE_INFO_KEY, _Slot.node_name or socket.gethostname(), json.dumps(info))


@signals.celeryd_after_setup.connect
def _remember_node_name(sender: str | None = None, **_: Any) -> None:
    """The worker's node name (e.g. ``judge@host``); pool processes inherit it when forked."""
    _Slot.node_name = sender


@signals.worker_process_init.connect
def _start_slot(**_: Any) -> None:
    """Start the slot server when the pool process starts, so the first submission is fast."""
    try:
        runner = _runner()
        _publish_node_info(runner)
    except Exception:
        logger.exception('sandbox slot failed to start; submissions will report internal_error')


@signals.worker_process_shutdown.connect
def _stop_slot(**_: Any) -> None:
    if _Slot.client is not None:
        _Slot.client.close()


@signals.after_setup_logger.connect
def _quiet_per_task_logs(**_: Any) -> None:
    # Celery logs two INFO lines per task in the main process; ours (JUDGE_LOG_SUBMISSIONS) replace them.
    for name in ('celery.worker.strategy', 'celery.app.trace'):
        logging.getLogger(name).setLevel(logging.WARNING)
