"""Live sessions in the worker: the Celery task of a session operation, the node's own queue, its heartbeat.

* The worker consumes ``judge.session.<node name>`` (`judge.transport.sessions.store.session_queue`) first,
  before the submission queues: every call of a session that lives on this node comes through it
  (`celeryd_after_setup`, in the main process, with Celery's public queue API).
* The main process says the node is alive every `SessionSettings.heartbeat_s` (a thread), so that
  gateways send a dead node's sessions elsewhere; a warm shutdown says it is gone.
* Each pool process runs the jobs through `judge.worker.sessionservice.SessionService`, over the
  worker's session host (`judge.sandbox.sessionclient`, started by the first pool process that needs it).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from celery import Task, signals

from judge.app import app
from judge.contracts.sessions import SESSION_TASK, SessionJob
from judge.runtime import describe_runtime, submission_python
from judge.sandbox.sessionclient import HostConfig, SessionClient
from judge.sessionsettings import get_session_settings
from judge.settings import get_settings
from judge.transport.sessions.store import SessionRecords, session_queue
from judge.transport.shard import Shard
from judge.transport.worker.replies import Replies
from judge.worker.sessionservice import SessionService

logger = logging.getLogger('judge.worker.sessions')
MIB = 1 << 20
_state: dict[str, Any] = {'node': None, 'service': None}


def host_config(node: str) -> HostConfig:
    """The session host's configuration, from the judge's settings and the session settings."""
    s, ss = get_settings(), get_session_settings()
    output = s.output_limit_mb * MIB
    return HostConfig(
        node=node,
        python=submission_python(s),
        work_root=s.work_root,
        memory_mb=s.max_memory,
        pids=s.pids_limit,
        time_s=s.max_execution_time,
        output_bytes=output,
        capture_bytes=min(max(64 * 1024, 4 * s.max_stdout_error_length), output),
        file_bytes=s.file_size_limit_mb * MIB,
        budget_mb=ss.memory_mb,
        session_uid_base=ss.uid_base,
        tier=s.sandbox_tier,
        allow_unsafe=s.allow_unsafe,
        uid_base=s.slot_uid_base,
        cpus=s.slot_cpus,
        hash_seed=ss.hash_seed,
        max_sessions=ss.max_sessions,
        disk_mb=ss.disk_mb,
        extra={'preload': s.preload_modules, 'scientific': s.scientific_modules},
    )


def service() -> SessionService:
    """This pool process's session service (made on first use)."""
    found: SessionService | None = _state['service']
    if found is None:
        s = get_settings()
        node = _state['node'] or 'judge@unknown'
        shard = Shard.from_settings(s)
        digest = str(describe_runtime(submission_python(s)).get('digest') or '')
        found = SessionService(
            node,
            SessionClient(host_config(node)),
            SessionRecords(shard.client),
            Replies(shard, s.reply_ttl_s, packed=s.transport == 'fast'),
            s.max_stdout_error_length,
            digest,
        )
        _state['service'] = found
    return found


@app.task(
    name=SESSION_TASK,
    bind=True,
    acks_late=True,
    retry_on_worker_lost=True,
    max_retries=1,
    default_retry_delay=0,
    soft_time_limit=get_session_settings().replay_s + get_settings().max_execution_time + 30,
    time_limit=get_session_settings().replay_s + get_settings().max_execution_time + 40,
)
def session(self: Task, job: SessionJob) -> None:
    """Run one session operation on this node; the answer goes to the job's reply list."""
    service().handle(job)


@signals.celeryd_after_setup.connect
def _consume_node_queue(sender: str | None = None, instance: Any = None, **_: Any) -> None:
    """Consume this node's session queue, before every other queue (main process)."""
    if not get_session_settings().enabled or sender is None or instance is None:
        return
    _state['node'] = sender
    queues = instance.app.amqp.queues
    before = list(queues.consume_from)
    mine = session_queue(sender)
    queues.select_add(mine)
    queues.select([mine, *[q for q in before if q != mine]])


@signals.worker_ready.connect
def _start_heartbeat(**_: Any) -> None:
    """Say the node is alive until the worker stops (main process)."""
    node = _state['node']
    if node is None:
        return
    every_s = get_session_settings().heartbeat_s
    records = SessionRecords(Shard.from_settings(get_settings()).client)

    def beat() -> None:
        while _state['node'] is not None:
            try:
                records.heartbeat(node, every_s)
            except Exception:
                logger.warning('could not say node %s is alive', node, exc_info=True)
            time.sleep(every_s)

    threading.Thread(target=beat, name='judge-session-heartbeat', daemon=True).start()


@signals.worker_shutdown.connect
def _leave(**_: Any) -> None:
    """A warm shutdown: gateways move this node's sessions at once (main process)."""
    node, _state['node'] = _state['node'], None
    if node is not None:
        try:
            SessionRecords(Shard.from_settings(get_settings()).client).leave(node)
        except Exception:
            logger.warning('could not say node %s is gone', node, exc_info=True)
