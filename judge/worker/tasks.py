"""The Celery task of one submission, adapting Celery to `judge.worker.service.Service`; nothing else.

Acks, retries and time limits are set here and in `celeryconfig.py`; judging and the slot's life
are the service's, and where the result goes is the job's (`judge.contracts.Job`).
"""

from __future__ import annotations

import logging
import time
import traceback
from typing import Any

from celery import Task, signals
from celery.exceptions import SoftTimeLimitExceeded

from judge import procname
from judge.app import app
from judge.contracts import RUN_TASK, Job, ResultDict, RunPayload
from judge.procname import name_process
from judge.settings import get_settings
from judge.transport.config import wiring
from judge.transport.worker.reconnects import BrokerWatch
from judge.worker.service import Service, learn_toolchain_versions

logger = logging.getLogger('judge.worker.tasks')

MAX_WORKER_LOST_RETRIES = 2
SOFT_LIMIT_MARGIN_S = 2.0
"""A result waits for an absent broker until this long before the task's soft time limit, at most:
the limit would otherwise abandon the slot (`Service.abandon_slot`)."""
service = Service(get_settings())
app.steps['consumer'].add(BrokerWatch)  # logs, counts and announces the consumer's reconnections


def as_job(args: tuple[Any, ...]) -> Job | None:
    """The `Job` of a task's arguments (also the four arguments of messages from before `Job`)."""
    if not args or not isinstance(args[0], dict):
        return None
    if 'sub' in args[0]:
        job: Job = args[0]  # type: ignore[assignment]
        return job
    if len(args) >= 3:  # (sub, reply_to, index[, batch])
        sub: RunPayload = args[0]  # type: ignore[assignment]
        return {'sub': sub, 'reply_to': args[1], 'index': int(args[2]), 'batch': str(args[3]) if args[3:] else ''}
    return None


@app.task(
    name=RUN_TASK,
    Request=wiring(get_settings()).task_request,
    bind=True,
    acks_late=True,
    retry_on_worker_lost=True,
    max_retries=MAX_WORKER_LOST_RETRIES,
    default_retry_delay=0,
)
def run(self: Task, *args: Any) -> ResultDict | None:
    """Judge one submission; the result goes to the job's reply list, or is returned."""
    job = as_job(args)
    if job is None:
        raise TypeError(f'{RUN_TASK} takes one Job, not {args!r:.200}')
    start = time.monotonic()
    until = start + get_settings().task_soft_time_limit_s - SOFT_LIMIT_MARGIN_S
    try:
        return service.judge(job, self.request.retries, until)
    except SoftTimeLimitExceeded:
        service.abandon_slot()
        return service.fail(
            job,
            'the task exceeded its soft time limit',
            traceback.format_exc(),
            time.monotonic() - start,
            until=start + get_settings().task_time_limit_s - SOFT_LIMIT_MARGIN_S,
        )


@signals.task_failure.connect
def _on_failure(
    sender: Any = None, task_id: str | None = None, exception: Any = None, args: Any = None, **_: Any
) -> None:
    """A task that died for good (hard time limit, pool process lost too often) still answers.

    On the stock path Celery's result backend already holds the failure; `Service.fail` pushes an
    answer only to a reply list.
    """
    if getattr(sender, 'name', None) != RUN_TASK:
        return
    job = as_job(tuple(args or ()))
    if job is None or not job.get('reply_to'):
        return
    logger.error('sub_id=%s task %s failed: %r', job['sub'].get('sub_id'), task_id, exception)
    try:  # one try: this may run in the consumer, which must not wait for an absent broker
        service.fail(job, f'task failed: {exception!r}', repr(exception), until=time.monotonic())
    except Exception:
        logger.exception('could not report the failure of task %s', task_id)


@signals.task_revoked.connect
def _on_revoked(sender: Any = None, request: Any = None, expired: bool = False, **_: Any) -> None:
    """The stock path cancels with ``revoke``: log it as the fast path logs a skipped job."""
    if getattr(sender, 'name', None) != RUN_TASK or expired:
        return
    job = as_job(tuple(getattr(request, 'args', None) or ()))
    if job is not None:
        service.log_skipped(job)


@signals.celeryd_after_setup.connect
def _remember_node_name(sender: str | None = None, **_: Any) -> None:
    """The worker's node name (e.g. ``judge@host``); pool processes inherit it when forked."""
    service.node_name = sender
    name_process(procname.CONSUMER)


@signals.worker_init.connect
def _learn_toolchains(**_: Any) -> None:
    """Main process, before the pool forks: the toolchain versions its pool processes inherit."""
    try:
        learn_toolchain_versions(get_settings())
    except Exception:  # each pool process asks for itself then
        logger.exception('could not learn the toolchain versions')


@signals.worker_process_init.connect
def _start_slot(**_: Any) -> None:
    """Start the slot server when the pool process starts, so the first submission is fast."""
    name_process(procname.POOL)
    try:
        service.start()
    except Exception:
        logger.exception('sandbox slot failed to start; submissions will report internal_error')


@signals.worker_process_shutdown.connect
def _stop_slot(**_: Any) -> None:
    service.stop()


@signals.after_setup_logger.connect
def _quiet_per_task_logs(**_: Any) -> None:
    # Celery logs two INFO lines per task in the main process; ours (JUDGE_LOG_SUBMISSIONS) replace them.
    for name in ('celery.worker.strategy', 'celery.app.trace'):
        logging.getLogger(name).setLevel(logging.WARNING)
