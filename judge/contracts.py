"""Wire models shared by the gateway and the workers, and the task names.

The HTTP shapes are upstream code-judge's (see the README's API section); every
field we add is additive and optional for clients.  Nothing here imports Celery.
"""

from __future__ import annotations

import enum
import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

RUN_TASK = 'judge.run'
"""Celery task name of one submission; the gateway enqueues by this name."""

QUEUE_RUN = 'judge.run'
"""Queue of single `/run` and `/judge` submissions."""
QUEUE_BATCH = 'judge.batch'
"""Queue of `/run/batch` and `/judge/batch` submissions."""
QUEUE_LONG = 'judge.long'
"""Queue of `/run/long-batch` and `/judge/long-batch` submissions."""
QUEUES = (QUEUE_RUN, QUEUE_BATCH, QUEUE_LONG)

# Redis transport: 0 is the highest priority, 9 the lowest (see celery.md).
PRIORITY_RUN = 1
PRIORITY_BATCH = 4
PRIORITY_LONG = 7

REPLY_KEY_PREFIX = 'judge:reply:'
"""Per-request Redis list on which workers push `[index, result]` pairs."""

Language = Literal['python', 'cpp']
LANGUAGES: tuple[str, ...] = ('python', 'cpp')


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


def new_id() -> str:
    """A fresh submission id (upstream uses uuid4 strings)."""
    return str(uuid.uuid4())


class Submission(BaseModel):
    """One piece of code to run, upstream's `Submission`."""

    model_config = ConfigDict(extra='ignore')

    sub_id: str | None = None
    type: Language
    options: dict[str, str] | None = None
    solution: str
    input: str | None = None
    expected_output: str | None = None

    @model_validator(mode='after')
    def _fill_id(self) -> Submission:
        if not self.sub_id:
            self.sub_id = new_id()
        return self


class BatchSubmission(BaseModel):
    """Upstream's `BatchSubmission`: at least one submission, results come back in order."""

    model_config = ConfigDict(extra='ignore')

    sub_id: str | None = None
    type: Literal['batch'] = 'batch'
    submissions: Annotated[list[Submission], Field(min_length=1)]

    @model_validator(mode='after')
    def _fill_id(self) -> BatchSubmission:
        if not self.sub_id:
            self.sub_id = new_id()
        return self


class JudgeResult(BaseModel):
    """Result of `/judge*` routes: upstream's fields plus our additive detail."""

    sub_id: str
    success: bool
    run_success: bool
    cost: float
    reason: ResultReason = ResultReason.UNSPECIFIED
    # --- additive fields (not in upstream) ---
    verdict: Verdict | None = None
    exit_code: int | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    error: str | None = Field(default=None, description='infrastructure error detail (internal_error only)')


class SubmissionResult(JudgeResult):
    """Result of `/run*` routes: a `JudgeResult` plus the (head-truncated) streams."""

    stdout: str | None = None
    stderr: str | None = None


class BatchJudgeResult(BaseModel):
    """Results of a `/judge/batch` or `/judge/long-batch` call, in submission order."""

    sub_id: str
    results: list[JudgeResult]


class BatchSubmissionResult(BaseModel):
    """Results of a `/run/batch` or `/run/long-batch` call, in submission order."""

    sub_id: str
    results: list[SubmissionResult]


class StatusResult(BaseModel):
    """`GET /status`: upstream's `queue` and `num_workers`, plus detail."""

    model_config = ConfigDict(extra='allow')

    queue: int
    num_workers: int


def task_payload(sub: Submission) -> dict[str, Any]:
    """The JSON-able payload the gateway sends to a worker for one submission."""
    return sub.model_dump(mode='json', exclude={'options'})


NODE_INFO_KEY = 'judge:nodes'
"""Redis hash: worker host name -> JSON of its isolation tier and toolchain versions."""
