"""One pool process's judging service: its sandbox slot, its runner, where its answers go.

No Celery here: `judge.worker.tasks` adapts Celery's task and signals to `Service`.  Each pool process
owns one sandbox slot (a slot server) for its whole life: it is started when the process starts
(`Service.start`), replaced after a soft time limit (`Service.abandon_slot`) and stopped with the
process.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import traceback
from typing import Any, cast

from judge.contracts import Job, ResultDict
from judge.errors import JudgeError
from judge.executors import EXECUTORS, Toolchain
from judge.results import internal_error
from judge.runtime import describe_runtime, submission_python
from judge.sandbox.client import SlotClient, SlotConfig
from judge.sandbox.errors import NoFreeSlot, SandboxError
from judge.sandbox.limits import Limits
from judge.sandbox.slots import claim_slot
from judge.settings import Settings
from judge.transport.shard import Shard
from judge.transport.worker.replies import CancelWatch, Replies
from judge.worker.error_cases import ErrorCaseWriter, should_save
from judge.worker.runner import Runner, RunnerConfig

logger = logging.getLogger('judge.worker.service')
MIB = 1024 * 1024
MEMORY_EVERY_S = 30.0
"""How often (at most) a pool process publishes its slot's memory for `/status`, after an execution."""


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


def run_limits(settings: Settings) -> Limits:
    """The node's run limits, built once from the settings; each language adjusts them once
    (`judge.executors.base.Executor.run_limits`) and the runner widens the capture for an expected output."""
    output_bytes = settings.output_limit_mb * MIB
    return Limits(
        time_s=settings.max_execution_time,
        memory_mb=settings.max_memory,
        output_bytes=output_bytes,
        file_bytes=settings.file_size_limit_mb * MIB,
        pids=settings.pids_limit,
        # up to 4 UTF-8 bytes per character of MAX_STDOUT_ERROR_LENGTH, at least 64 KiB
        capture_bytes=min(max(64 * 1024, 4 * settings.max_stdout_error_length), output_bytes),
    )


def build_runner(settings: Settings, runtime_digest: str = '') -> Runner:
    """Claim a slot, start its slot server and build the runner over it.

    ``runtime_digest`` names the submission runtime in every result (`judge.runtime`).
    """
    index, lock_fd = claim_slot()  # the lock is held for the life of the process
    try:
        return _build_runner(settings, runtime_digest, index)
    except BaseException:
        os.close(lock_fd)  # give the slot number back: the next try claims one again
        raise


def warm_config(settings: Settings) -> dict[str, Any]:
    """The slot server's warm-Python configuration under ``settings``: preloads, CPU share, renewals."""
    return {
        'preload': settings.preload_modules,
        'scientific': settings.scientific_modules,
        'cpus': settings.slot_cpus,
        'renew_execs': settings.warm_renew_execs,
        'scientific_renew_execs': settings.warm_scientific_renew_execs,
        'renew_s': settings.warm_renew_s,
    }


def _build_runner(settings: Settings, runtime_digest: str, index: int) -> Runner:
    toolchain = _toolchain(settings, runtime_digest)
    cache_dir, python = toolchain.cache_dir, toolchain.python
    pch_dir = os.path.join(cache_dir, 'pch')  # the compiler reads the PCH; nothing else in the cache is readable
    os.makedirs(pch_dir, mode=0o755, exist_ok=True)
    limits = run_limits(settings)
    client = SlotClient(
        SlotConfig(
            slot=index,
            python=python,
            memory_mb=limits.memory_mb,
            pids=limits.pids,
            tier=settings.sandbox_tier,
            allow_unsafe=settings.allow_unsafe,
            work_root=settings.work_root,
            uid_base=settings.slot_uid_base,
            extra={'keep_writable': [cache_dir], 'read_paths': [pch_dir], **warm_config(settings)},
        )
    )
    client.ensure_started()
    return Runner(toolchain, client, RunnerConfig(limits=limits, max_chars=settings.max_stdout_error_length))


def _toolchain(settings: Settings, runtime_digest: str) -> Toolchain:
    return Toolchain(
        python=submission_python(settings),
        cxx=settings.cpp_compiler_path,
        python_mode=settings.python_mode,
        cache_dir=_cache_dir(settings),
        compile_time_s=settings.compile_time_limit,
        compile_memory_mb=settings.compile_memory_mb,
        cache_max_mb=settings.compile_cache_mb,
        artifact_max_mb=settings.compile_artifact_mb,
        runtime=runtime_digest,
    )


def learn_toolchain_versions(settings: Settings) -> dict[str, str]:
    """Every language's toolchain version, asked once (`judge.executors.toolchain.tool_version` caches it).

    Called in the worker's main process before its pool forks, so that pool processes, replaced every
    ``worker_max_tasks_per_child`` tasks, inherit the answers instead of starting each tool again
    (``javac -version`` alone starts a JVM: about 0.26 s of CPU).
    """
    toolchain = _toolchain(settings, '')
    no_slot = cast(SlotClient, None)  # `version` uses the toolchain only
    return {language: cls(toolchain, no_slot).version() for language, cls in EXECUTORS.items()}


class Service:
    """Judges jobs in this process's slot and delivers their results."""

    def __init__(self, settings: Settings, shard: Shard | None = None) -> None:
        self.settings = settings
        self.shard = shard or Shard.from_settings(settings)
        self.replies = Replies(
            self.shard, settings.reply_ttl_s, packed=settings.transport == 'fast', hold_s=settings.broker_outage_s
        )
        self.cancels = CancelWatch(self.shard)
        self.node_name: str | None = None
        self._runner: Runner | None = None
        self._error_cases: ErrorCaseWriter | None = None
        self._runtime: dict[str, Any] | None = None
        self._memory_at = 0.0

    @property
    def runtime(self) -> dict[str, Any]:
        """The submission runtime this node runs programs in (python, packages, digest), read once."""
        if self._runtime is None:
            self._runtime = describe_runtime(submission_python(self.settings))
        return self._runtime

    @property
    def runner(self) -> Runner:
        """This process's runner (its slot server is started on first use)."""
        if self._runner is None:
            self._runner = build_runner(self.settings, str(self.runtime.get('digest') or ''))
        return self._runner

    def start(self) -> None:
        """Start the slot now, so the first submission is fast, and publish this node's information."""
        runner = self.runner
        info = {
            'tier': runner.slot.tier,
            'sandbox': runner.slot.detail,
            'python_mode': runner.toolchain.python_mode,
            'toolchains': {lang: runner.executor(lang).version() for lang in EXECUTORS},
            'runtime': self.runtime,
            'updated_at': time.time(),
        }
        self.shard.publish_node_info(self.node_name or socket.gethostname(), info)
        self.publish_memory()

    def publish_memory(self) -> None:
        """Publish this slot's memory (PSS of its server, warm parents and spare) for `/status`."""
        self._memory_at = time.monotonic()
        runner = self._runner
        if runner is None:
            return
        try:
            memory = runner.slot.memory()
            info = {'slot': runner.slot.config.slot, 'pid': os.getpid(), 'memory': memory, 'updated_at': time.time()}
            self.shard.publish_slot_info(self.node_name or socket.gethostname(), runner.slot.config.slot, info)
        except Exception:  # never costs a submission
            logger.exception('could not publish the slot memory')

    def stop(self) -> None:
        """Stop the slot server."""
        if self._runner is not None:
            self._runner.slot.close()

    def abandon_slot(self) -> None:
        """The slot server may be stuck (a soft time limit hit): start a fresh one next time."""
        if self._runner is not None:
            self._runner.slot.close()

    def judge(self, job: Job, retries: int = 0, until: float | None = None) -> ResultDict | None:
        """Judge ``job`` and deliver its result; returns it when the job has no reply list.

        ``until`` (``time.monotonic()``) is the latest a result may wait for an absent broker.
        """
        sub = job['sub']
        start = time.monotonic()
        if self.cancels.is_cancelled(job):
            self.log_skipped(job)
            return None
        log = self.settings.log_submissions  # off by default: Flower already shows every task
        if log:
            logger.info(
                'start sub_id=%s batch=%s pid=%d retries=%d', sub.get('sub_id'), job['batch'], os.getpid(), retries
            )
        failure: str | None = None
        try:
            result = self.runner.run(sub, wait_s=job.get('wait_s'))
        except NoFreeSlot:
            # This process has no slot (the host's are all taken), which is not this submission's
            # failure: the task fails and `judge.worker.tasks` answers for it; the next one claims again.
            raise
        except (SandboxError, JudgeError, OSError, ValueError) as exc:
            logger.exception('sub_id=%s batch=%s: infrastructure failure', sub.get('sub_id'), job['batch'])
            failure = traceback.format_exc()
            result = internal_error(sub['sub_id'], f'{type(exc).__name__}: {exc}', time.monotonic() - start)
        out = self.finish(job, result, failure, until)
        if time.monotonic() - self._memory_at > MEMORY_EVERY_S:
            self.publish_memory()
        if log:
            logger.info(
                'sub_id=%s batch=%s type=%s verdict=%s cost=%.4fs elapsed=%.4fs',
                sub.get('sub_id'),
                job['batch'],
                sub.get('type'),
                result['verdict'],
                result['cost'],
                time.monotonic() - start,
            )
        return out

    def finish(
        self, job: Job, result: ResultDict, failure: str | None = None, until: float | None = None
    ) -> ResultDict | None:
        """Deliver ``result`` (waiting for an absent broker until ``until`` at most) and keep a copy of a
        failed case (`ERROR_CASE_SAVE_PATH`)."""
        out = self.replies.deliver(job, result, until)
        self.save_error_case(job, result, failure)
        return out

    def fail(
        self, job: Job, error: str, failure: str | None = None, cost_s: float = 0.0, until: float | None = None
    ) -> ResultDict | None:
        """Answer ``internal_error`` for a job that could not be judged."""
        return self.finish(job, internal_error(job['sub'].get('sub_id') or '', error, cost_s), failure, until)

    def save_error_case(self, job: Job, result: ResultDict, failure: str | None) -> None:
        """Queue a failed submission for `ERROR_CASE_SAVE_PATH` (never blocks, never raises)."""
        path = self.settings.error_case_save_path
        if not path or not should_save(dict(result)):
            return
        if self._error_cases is None:
            self._error_cases = ErrorCaseWriter(path, self.settings.error_case_budget_mb * 1024 * 1024)
        self._error_cases.submit(dict(job['sub']), dict(result), failure)

    @staticmethod
    def log_skipped(job: Job) -> None:
        """The job's client went away before it started."""
        logger.info('sub_id=%s batch=%s: skipped, its client went away', job['sub'].get('sub_id'), job['batch'])
