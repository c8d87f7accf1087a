"""The one settings object, read from the environment with upstream code-judge's names and defaults.

Every field has a working default, so nothing needs to be set to run locally.  Upstream's names
(`REDIS_URI`, `MAX_EXECUTION_TIME`, ...) keep their meaning; our additions start with `JUDGE_`.
Read only at the edges (`celeryconfig.py`, `api/main.py`, `judge/worker/tasks.py`,
`judge/transport/internals/request.py`).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import sys
from typing import Literal

from pydantic import AliasChoices, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_python() -> str:
    """The system's python3 (the interpreter must be readable by the sandbox's unprivileged uids)."""
    # pyenv's interpreter lives in /root, which the slot uids cannot read.
    for candidate in ('/usr/bin/python3', '/usr/local/bin/python3'):
        if os.access(candidate, os.X_OK):
            return os.path.realpath(candidate)
    return os.path.realpath(sys.executable)


def _default_runtime_root() -> str:
    # Under /opt: readable by the slot uids in every jail tier (the namespaces tier hides home dirs).
    if os.geteuid() == 0:
        return '/opt/judge-runtime'
    return os.path.join(os.path.expanduser('~'), '.cache', 'judge-runtime')


def _default_cxx() -> str:
    found = shutil.which('g++') or '/usr/bin/g++'
    return os.path.realpath(found)


def _env(*names: str) -> AliasChoices:
    return AliasChoices(*names)


DEFAULT_PYTHON_PRELOAD = (
    'ast,base64,bisect,collections,contextlib,copy,functools,heapq,itertools,json,linecache,math,re,string,'
    'traceback,types,typing'
)
"""Warm Python's preloaded modules: what tool-call templates (`toolkit.wrapper`, rStar2-Agent's client's:
base64 text run through ``exec``, errors told with ``traceback``) and typical solutions import.  Each
costs its memory in every fork and exit of every execution; one that is not preloaded costs its import
time in each program importing it."""

DEFAULT_SCIENTIFIC_PRELOAD = 'sympy,numpy'
"""The scientific warm parent's extra imports (`judge.sandbox.zygote.prepare` warms them up)."""


class Settings(BaseSettings):
    """Configuration of gateway, workers and Flower (env var names in `validation_alias`)."""

    model_config = SettingsConfigDict(env_file=None, extra='ignore', populate_by_name=True)

    # --- upstream names ---
    redis_uri: str = Field('redis://127.0.0.1:6379/0', validation_alias=_env('REDIS_URI'))
    max_execution_time: float = Field(10, gt=0, validation_alias=_env('MAX_EXECUTION_TIME'))
    """Per-submission wall-clock limit, seconds."""
    max_memory: int = Field(256, gt=0, validation_alias=_env('MAX_MEMORY'))
    """Per-submission memory limit, MiB."""
    max_workers: int = Field(0, ge=0, validation_alias=_env('MAX_WORKERS'))
    """Pool processes per worker; 0 means the CPU count."""
    max_stdout_error_length: int = Field(1000, ge=0, validation_alias=_env('MAX_STDOUT_ERROR_LENGTH'))
    """Characters of stdout and of stderr returned (head kept)."""
    max_queue_work_life_time: float = Field(4, ge=0, validation_alias=_env('MAX_QUEUE_WORK_LIFE_TIME'))
    long_batch_max_queue_wait_time: float | None = Field(None, validation_alias=_env('LONG_BATCH_MAX_QUEUE_WAIT_TIME'))
    max_batch_chunk_size: int = Field(2, ge=0, validation_alias=_env('MAX_BATCH_CHUNK_SIZE'))
    max_long_batch_chunk_size: int = Field(100, ge=0, validation_alias=_env('MAX_LONG_BATCH_CHUNK_SIZE'))
    error_case_save_path: str = Field('', validation_alias=_env('ERROR_CASE_SAVE_PATH'))
    python_executor_path: str = Field('', validation_alias=_env('PYTHON_EXECUTOR_PATH'))
    """Interpreter of Python submissions; empty (the default): the managed runtime's (`judge.runtime`),
    or the system's `python3` when that runtime is not built (the worker then warns)."""
    cpp_compiler_path: str = Field(default_factory=_default_cxx, validation_alias=_env('CPP_COMPILER_PATH'))

    # --- ours ---
    runtime_root: str = Field(default_factory=_default_runtime_root, validation_alias=_env('JUDGE_RUNTIME_ROOT'))
    """Where managed submission runtimes are built (`judge.runtime`)."""
    runtime_base_python: str = Field(default_factory=default_python, validation_alias=_env('JUDGE_RUNTIME_BASE_PYTHON'))
    """The interpreter the managed runtime is made from (must be readable by the slot uids)."""
    runtime_requirements: str = Field('', validation_alias=_env('JUDGE_RUNTIME_REQUIREMENTS'))
    """An extra pip requirements file for the runtime (installed with the pins as constraints)."""
    runtime_modules: str = Field('', validation_alias=_env('JUDGE_RUNTIME_MODULES'))
    """Directories (``:``-separated) of the operator's modules (e.g. a reward scorer), copied into the
    runtime and importable by submissions."""
    broker_shards: str = Field('', validation_alias=_env('JUDGE_BROKER_SHARDS'))
    """Several independent Redis instances (broker shards), comma-separated URLs, the same list in the
    same order on every gateway and worker; empty: one shard, `REDIS_URI` (`shard_urls`)."""
    worker_shard: int = Field(0, ge=0, validation_alias=_env('JUDGE_WORKER_SHARD'))
    """The shard (index into `shard_urls`) a worker instance, or Flower, connects to."""
    transport: Literal['fast', 'stock'] = Field('fast', validation_alias=_env('JUDGE_TRANSPORT'))
    """How submissions travel (`judge.transport`): `fast` (the judge's overrides of Celery, kombu and
    redis-py internals) or `stock` (Celery's public API only); gateway and workers may differ."""
    python_mode: Literal['warm', 'fresh'] = Field('warm', validation_alias=_env('JUDGE_PYTHON_MODE'))
    """`warm`: fork a pre-started interpreter per submission; `fresh`: start `python3 -I file.py`."""
    python_preload: str = Field(DEFAULT_PYTHON_PRELOAD, validation_alias=_env('JUDGE_PYTHON_PRELOAD'))
    """Comma-separated modules the warm interpreter imports once, so programs get them for free."""
    python_scientific_preload: str = Field(
        DEFAULT_SCIENTIFIC_PRELOAD, validation_alias=_env('JUDGE_PYTHON_SCIENTIFIC_PRELOAD')
    )
    """Comma-separated modules a second, *scientific* warm parent per slot imports on top of the preload
    list before a warm-up run; it serves programs that mention them (or scipy, mpmath, networkx,
    math_verify).  Started on the first such program; empty: no scientific parent."""
    sandbox_tier: Literal['auto', 'namespaces', 'landlock', 'uid', 'none'] = Field(
        'auto', validation_alias=_env('JUDGE_SANDBOX_TIER')
    )
    allow_unsafe: bool = Field(False, validation_alias=_env('JUDGE_ALLOW_UNSAFE'))
    """Allow running untrusted code with no isolation when no tier is available."""
    work_root: str = Field('/tmp/judge-work', validation_alias=_env('JUDGE_WORK_ROOT'))
    slot_uid_base: int = Field(61000, gt=0, validation_alias=_env('JUDGE_SLOT_UID_BASE'))
    output_limit_mb: int = Field(16, gt=0, validation_alias=_env('JUDGE_OUTPUT_LIMIT_MB'))
    """stdout+stderr beyond this kills the run with verdict `output_limit`."""
    file_size_limit_mb: int = Field(16, gt=0, validation_alias=_env('JUDGE_FILE_SIZE_LIMIT_MB'))
    pids_limit: int = Field(64, ge=8, validation_alias=_env('JUDGE_PIDS_LIMIT'))
    slot_cpus: float = Field(1.0, ge=0, validation_alias=_env('JUDGE_SLOT_CPUS'))
    """CPU quota of each slot, in CPUs, over all of a submission's processes (0: no quota, equal shares only)."""
    warm_renew_execs: int = Field(1000, ge=1, validation_alias=_env('JUDGE_WARM_RENEW_EXECS'))
    """Executions after which a slot's lean or bare warm parent is replaced by a fresh interpreter
    (new hash secret, layout)."""
    warm_scientific_renew_execs: int = Field(5000, ge=1, validation_alias=_env('JUDGE_WARM_SCIENTIFIC_RENEW_EXECS'))
    """The same for the scientific parent, whose start costs about 0.7 s of CPU (about 1 ms per math call at 1000)."""
    warm_renew_s: float = Field(300, ge=1, validation_alias=_env('JUDGE_WARM_RENEW_S'))
    """Seconds after which a slot's warm parent is replaced, busy or idle."""
    compile_time_limit: float = Field(30, gt=0, validation_alias=_env('JUDGE_COMPILE_TIME_LIMIT'))
    compile_memory_mb: int = Field(1024, gt=0, validation_alias=_env('JUDGE_COMPILE_MEMORY_MB'))
    compile_artifact_mb: int = Field(64, gt=0, validation_alias=_env('JUDGE_COMPILE_ARTIFACT_MB'))
    """Largest file a compile may write, the compiled program included (a larger one is a compile error)."""
    compile_cache_mb: int = Field(2048, gt=0, validation_alias=_env('JUDGE_COMPILE_CACHE_MB'))
    """Size bound of the node's compile cache, enforced before each compile stores its program (the least
    recently used entries go first; each slot compiling at that moment may add one program over it)."""
    cache_dir: str = Field('/var/cache/judge', validation_alias=_env('JUDGE_CACHE_DIR'))
    max_batch_size: int = Field(10000, gt=0, validation_alias=_env('JUDGE_MAX_BATCH_SIZE'))
    max_body_mb: float = Field(64, gt=0, validation_alias=_env('JUDGE_MAX_BODY_MB'))
    """Request bodies larger than this get 413 before they are parsed."""
    max_in_flight: int = Field(50000, ge=0, validation_alias=_env('JUDGE_MAX_IN_FLIGHT'))
    """Submissions in flight in all gateway processes together (counted in the first shard's Redis);
    beyond it requests get 429 + Retry-After. 0: no cap."""
    gateway_keep_alive_s: int = Field(75, gt=0, validation_alias=_env('JUDGE_GATEWAY_KEEP_ALIVE_S'))
    """How long the gateway keeps an idle HTTP connection open: longer than clients keep theirs in their
    pools (the toolkit's 30 s, aiohttp's 15 s), so that no client sends a request on a connection the
    gateway is closing (uvicorn's own 5 s failed such requests after every idle gap of about 5 s)."""
    gateway_lease_s: float = Field(15, gt=0, validation_alias=_env('JUDGE_GATEWAY_LEASE_S'))
    """A gateway process that stops without a word (killed) holds its share of the in-flight cap this long."""
    retry_after_s: int = Field(2, ge=1, validation_alias=_env('JUDGE_RETRY_AFTER_S'))
    """`Retry-After` of a 429 answer, seconds."""
    reply_ttl_s: int = Field(600, gt=0, validation_alias=_env('JUDGE_REPLY_TTL_S'))
    door_result_ttl_s: int = Field(3600, gt=0, validation_alias=_env('JUDGE_DOOR_RESULT_TTL_S'))
    """How long a result fetched later by token (the Judge0 door's submissions) is kept in Redis, seconds."""
    redis_tls_ca_file: str = Field('', validation_alias=_env('JUDGE_REDIS_TLS_CA_FILE'))
    """CA bundle to verify a `rediss://` server with."""
    redis_tls_cert_file: str = Field('', validation_alias=_env('JUDGE_REDIS_TLS_CERT_FILE'))
    redis_tls_key_file: str = Field('', validation_alias=_env('JUDGE_REDIS_TLS_KEY_FILE'))
    redis_tls_verify: Literal['required', 'optional', 'none'] = Field(
        'required', validation_alias=_env('JUDGE_REDIS_TLS_VERIFY')
    )
    redis_sentinel_master: str = Field('mymaster', validation_alias=_env('JUDGE_REDIS_SENTINEL_MASTER'))
    """Master name when `REDIS_URI` is `sentinel://...`."""
    error_case_budget_mb: int = Field(1024, gt=0, validation_alias=_env('JUDGE_ERROR_CASE_BUDGET_MB'))
    """Disk budget of `ERROR_CASE_SAVE_PATH`; the oldest cases go first."""
    visibility_timeout_s: float | None = Field(None, gt=0, validation_alias=_env('JUDGE_VISIBILITY_TIMEOUT_S'))
    """Unacked tasks of a vanished worker come back after this; default max(120, 2 x task hard limit)."""
    broker_outage_s: float = Field(60, gt=0, validation_alias=_env('JUDGE_BROKER_OUTAGE_S'))
    """The longest broker outage ridden out: the gateway holds its requests and publishes again what the
    broker lost, a worker holds a computed result (also bounded by the task's soft time limit)."""
    redis_timeout_s: float = Field(5, gt=0, validation_alias=_env('JUDGE_REDIS_TIMEOUT_S'))
    """A Redis command unanswered after this long counts as a broker fault (gateway, workers, Flower)."""
    log_level: Literal['DEBUG', 'INFO', 'WARNING', 'ERROR', 'debug', 'info', 'warning', 'error'] = Field(
        'INFO', validation_alias=_env('JUDGE_LOG_LEVEL')
    )
    """Level of the gateway's access log (one line per request with its ids)."""
    task_events: bool = Field(True, validation_alias=_env('JUDGE_TASK_EVENTS'))
    """Send Celery task events (Flower needs them; they cost CPU in the worker's main process per task)."""
    task_started_events: bool = Field(False, validation_alias=_env('JUDGE_TASK_STARTED_EVENTS'))
    """Also send ``task-started`` (Flower then shows STARTED; see `judge.transport.internals.request`)."""
    log_submissions: bool = Field(False, validation_alias=_env('JUDGE_LOG_SUBMISSIONS'))
    """Workers log two INFO lines per submission (start; verdict and times); off, Flower shows every task."""

    @model_validator(mode='after')
    def _derived(self) -> Settings:
        if self.max_workers == 0:
            self.max_workers = os.cpu_count() or 1
        if self.runtime_requirements:
            self.runtime_requirements = os.path.abspath(self.runtime_requirements)
        dirs = (p for p in self.runtime_modules.split(os.pathsep) if p)
        self.runtime_modules = os.pathsep.join(os.path.abspath(p) for p in dirs)
        if self.worker_shard >= len(self.shard_urls):
            raise ValueError(
                f'JUDGE_WORKER_SHARD={self.worker_shard} but there are {len(self.shard_urls)} shard(s): 0 to '
                f'{len(self.shard_urls) - 1}'
            )
        floor = 3600 + self.max_process_time
        if self.long_batch_max_queue_wait_time is None:
            self.long_batch_max_queue_wait_time = floor
        return self

    @property
    def shard_urls(self) -> list[str]:
        """Every broker shard's Redis URL: `JUDGE_BROKER_SHARDS`, else `REDIS_URI` alone."""
        urls = [u for u in re.split(r'[,\s]+', self.broker_shards) if u]
        return urls or [self.redis_uri]

    @property
    def preload_modules(self) -> list[str]:
        """`python_preload` as module names: the lean warm parent's imports."""
        return [m.strip() for m in self.python_preload.split(',') if m.strip()]

    @property
    def scientific_modules(self) -> list[str]:
        """`python_scientific_preload` as module names: the scientific warm parent's imports."""
        return [m.strip() for m in self.python_scientific_preload.split(',') if m.strip()]

    @property
    def broker_url(self) -> str:
        """The Redis this process's Celery app uses: shard `worker_shard`."""
        return self.shard_urls[self.worker_shard]

    @property
    def max_process_time(self) -> float:
        """Upstream's derived budget for one submission, including process start-up."""
        return self.max_execution_time + 5

    @property
    def max_queue_wait_time(self) -> float:
        """Deadline of `/run`, `/judge` and the normal batch routes, seconds (upstream: 19)."""
        return self.max_process_time + self.max_queue_work_life_time

    @property
    def long_batch_wait_s(self) -> float:
        """Deadline of the long-batch routes, seconds."""
        assert self.long_batch_max_queue_wait_time is not None
        return self.long_batch_max_queue_wait_time

    @property
    def task_soft_time_limit_s(self) -> float:
        """Celery soft limit of one submission task: compile + run + margin."""
        return self.compile_time_limit + self.max_execution_time + 10

    @property
    def task_time_limit_s(self) -> float:
        """Celery hard limit: the backstop after the soft limit."""
        return self.task_soft_time_limit_s + 10


@functools.lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()
