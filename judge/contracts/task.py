"""What travels between the gateway and a worker: the task name, one submission and its result.

`Job` is the one argument of the `RUN_TASK` task; `ResultDict` is what comes back, built only by
`judge.results`.  Plain typed dicts (they cross Celery as JSON); no pydantic, no Celery.
"""

from __future__ import annotations

import enum
from typing import Literal, NotRequired, TypedDict

RUN_TASK = 'judge.run'
"""Celery task name of one submission; the gateway enqueues by this name."""

Language = Literal['python', 'cpp', 'c', 'java', 'javascript', 'go', 'rust', 'bash']
"""A submission's `type`: the languages of `judge.executors.EXECUTORS` (a test keeps them equal)."""


class ResultReason(enum.StrEnum):
    """Upstream's `reason` values (exact strings)."""

    UNSPECIFIED = ''
    INTERNAL_ERROR = 'internal_error'
    WORKER_TIMEOUT = 'worker_timeout'
    QUEUE_TIMEOUT = 'queue_timeout'
    INVALID_INPUT = 'invalid_input'


class Verdict(enum.StrEnum):
    """Our additive, judge-style verdict.  Order of precedence: see `judge.verdict`."""

    ACCEPTED = 'accepted'
    WRONG_ANSWER = 'wrong_answer'
    RUNTIME_ERROR = 'runtime_error'
    TIME_LIMIT = 'time_limit'
    MEMORY_LIMIT = 'memory_limit'
    OUTPUT_LIMIT = 'output_limit'
    COMPILE_ERROR = 'compile_error'
    INTERNAL_ERROR = 'internal_error'
    QUEUE_TIMEOUT = 'queue_timeout'


MANAGER_MAX_PROCESSES = 16
"""At most this many copies of a submission talk to one manager (`ManagerDict.processes`)."""


class ManagerDict(TypedDict):
    """A trusted manager program the submission talks to over FIFOs (IOI's Communication tasks,
    `judge.worker.communication`)."""

    source: str
    """The manager's C++ source (compiled like any C++ submission, cached per node)."""
    files: NotRequired[dict[str, str]]
    """Files beside the manager's source when it compiles (headers), relative path -> base64."""
    processes: int
    """How many copies of the submission run, each with its own pair of FIFOs (1 to `MANAGER_MAX_PROCESSES`)."""
    user_io: Literal['std_io', 'fifo_io']
    """``std_io``: a copy's stdin and stdout are its FIFOs; ``fifo_io``: it gets their paths as arguments."""
    args: NotRequired[list[str]]
    """Arguments of the manager after the FIFOs' paths."""


class RunPayload(TypedDict):
    """One submission as a worker receives it (`Submission.payload`; `/judge/tests` adds `checker`).

    The keys after `seed` are the compatible doors' (`api.doors`); the native routes never send them.
    """

    sub_id: str
    type: str
    solution: str
    input: str | None
    expected_output: str | None
    checker: NotRequired[str]
    seed: NotRequired[int]
    time_limit_s: NotRequired[float]
    """The run's own wall-clock limit, seconds: the node's limit lowers it, never raises it."""
    memory_mb: NotRequired[int]
    """The run's own memory limit, MiB: the node's limit lowers it, never raises it."""
    files: NotRequired[dict[str, str]]
    """Files put in the run's work dir before it starts: relative path -> base64 content."""
    fetch: NotRequired[list[str]]
    """Relative paths read back from the work dir after the run (the result's `files`)."""
    args: NotRequired[list[str]]
    """The program's command-line arguments."""
    compile_files: NotRequired[dict[str, str]]
    """Compiled languages: files beside the source when it compiles (headers; C and C++ sources among
    them are compiled with it), relative path -> base64; part of the compile cache's key."""
    manager: NotRequired[ManagerDict]
    """Run the submission beside this manager, which reads the input and writes the output."""
    full: NotRequired[bool]
    """Answer with the streams whole (up to the node's output limit, without upstream's timeout marker)
    and with `usage`."""


class Job(TypedDict):
    """The one argument of the `RUN_TASK` task."""

    sub: RunPayload
    reply_to: str | None
    """The request's reply list (fast path); ``None``: the task returns the result (stock path)."""
    index: int
    """The submission's place in its request."""
    batch: str
    """The request's label (batch id and trace id), for logs and Flower."""
    wait_s: NotRequired[float]
    """How long the gateway still waited when it published the job: a compile that would take longer than
    this leaves the run time limit is stopped earlier, so that what a source does always answers in time."""


class CompileDict(TypedDict):
    """`CompileInfo` as JSON."""

    ok: bool
    cached: bool
    cost: float
    stderr: str
    stderr_truncated: bool


class JudgeResultDict(TypedDict):
    """`JudgeResult` as JSON: every field, always (built by `judge.results.build_result`)."""

    sub_id: str
    success: bool
    run_success: bool
    cost: float
    reason: str
    verdict: str
    exit_code: int | None
    stdout_truncated: bool
    stderr_truncated: bool
    error: str | None
    toolchain: str | None
    runtime: str | None
    compile_cached: bool | None
    compile: CompileDict | None


class UsageDict(TypedDict):
    """What one run used (results of `RunPayload.full` submissions)."""

    cpu_s: float
    max_rss_kb: int
    signal: int | None
    """The signal that ended the program, if one did."""


class ResultDict(JudgeResultDict):
    """`SubmissionResult` as JSON: a worker's answer for one submission."""

    stdout: str | None
    stderr: str | None


class FullResultDict(ResultDict, total=False):
    """A door's submission's result (`RunPayload.full`, ``fetch``): a `ResultDict` and what it asked for."""

    usage: UsageDict
    """`RunPayload.full` submissions that ran."""
    files: dict[str, str]
    """`RunPayload.fetch`: the fetched files that were there, relative path -> base64 content."""
