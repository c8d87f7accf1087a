"""The HTTP request and response models of the gateway (pydantic).

The shapes are upstream code-judge's (docs/api.md); every field we add is additive
and optional for clients.  Of the judge, only the checker names (`judge.checker`, pure) are imported.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Literal, Self, cast

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from judge.checker import get_checker
from judge.contracts.task import Language, ResultReason, RunPayload, Verdict


def new_id() -> str:
    """A fresh submission id (upstream uses uuid4 strings)."""
    return str(uuid.uuid4())


def _check_unicode(value: str | None) -> str | None:
    """Reject lone surrogates (valid JSON escapes, but not text): 422 instead of a failure later."""
    if value is not None and not value.isascii():
        try:
            value.encode('utf-8')
        except UnicodeEncodeError as e:
            raise ValueError(f'invalid Unicode: lone surrogate at position {e.start}') from None
    return value


check_text = _check_unicode
"""The text rule of every request field (no lone surrogates), for the compatible doors' models too."""

SEED_MAX = 2**32 - 1
"""The largest `seed` (that of ``PYTHONHASHSEED``)."""
SEED_DOC = (
    "Python only: replay the run's randomness (random, numpy, generators seeded at import, str hashing); "
    'absent: fresh randomness. Seeded runs start a fresh interpreter'
)


class _Identified(BaseModel):
    """A request body's optional ``sub_id``: checked as text, a fresh id when absent (as upstream does)."""

    model_config = ConfigDict(extra='ignore')

    sub_id: str | None = None

    @field_validator('sub_id')
    @classmethod
    def _id_text(cls, value: str | None) -> str | None:
        return _check_unicode(value)

    @model_validator(mode='after')
    def _fill_id(self) -> Self:
        if not self.sub_id:
            self.sub_id = new_id()
        return self


class Submission(_Identified):
    """One piece of code to run, upstream's `Submission`."""

    type: Language
    options: dict[str, str] | None = None
    solution: str
    input: str | None = None
    expected_output: str | None = None
    seed: int | None = Field(default=None, ge=0, le=SEED_MAX, description=SEED_DOC)

    @field_validator('solution', 'input', 'expected_output')
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        return _check_unicode(value)

    @field_validator('options')
    @classmethod
    def _options(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for key, item in (value or {}).items():
            _check_unicode(key)
            _check_unicode(item)
        return value

    def payload(self) -> RunPayload:
        """What a worker needs of this submission (every field but `options`; `seed` when set)."""
        exclude = {'options'} if self.seed is not None else {'options', 'seed'}
        return cast(RunPayload, self.model_dump(mode='json', exclude=exclude))


class BatchSubmission(_Identified):
    """Upstream's `BatchSubmission`: at least one submission, results come back in order."""

    type: Literal['batch'] = 'batch'
    submissions: Annotated[list[Submission], Field(min_length=1)]


class CompileInfo(BaseModel):
    """How the compile step of a compiled language went (cached: it was compiled before on that node)."""

    ok: bool
    cached: bool
    cost: float = Field(0.0, description='compile wall time, seconds (of the original compile when cached)')
    stderr: str = ''
    stderr_truncated: bool = False


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
    toolchain: str | None = Field(default=None, description='version of the compiler or interpreter used')
    runtime: str | None = Field(
        default=None, description='digest of the submission runtime it ran in (pins and interpreter; see /status)'
    )
    compile_cached: bool | None = Field(default=None, description='compiled languages: the compile cache hit')
    compile: CompileInfo | None = None


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


class TestCase(BaseModel):
    """One test of `/judge/tests`: stdin and the expected stdout."""

    model_config = ConfigDict(extra='ignore')
    __test__ = False  # not a pytest class

    input: str = ''
    expected_output: str


class JudgeTestsRequest(_Identified):
    """`POST /judge/tests`: one solution, compiled once, judged on every test."""

    type: Language
    solution: str
    tests: Annotated[list[TestCase], Field(min_length=1)]
    checker: str = Field('strip', description='exact | strip (upstream rule) | tokens | float:<tolerance>')
    seed: int | None = Field(default=None, ge=0, le=SEED_MAX, description=SEED_DOC)
    stop_on_first_failure: bool = Field(
        False,
        description='report tests only up to the first failing one (every test is still judged, in parallel)',
    )

    @field_validator('checker')
    @classmethod
    def _checker(cls, value: str) -> str:
        get_checker(value)  # ValueError (422) for a name the workers would not know
        return value


class TestResult(JudgeResult):
    """One test's result in a `/judge/tests` answer (a `JudgeResult` plus the test's index)."""

    __test__ = False

    index: int


class JudgeTestsResult(BaseModel):
    """Answer of `/judge/tests`: the overall verdict, the reward-ready pass rate and every test."""

    sub_id: str
    verdict: Verdict
    passed: int
    total: int
    pass_rate: float
    compile_cached: bool | None = Field(None, description='compiled languages: no worker had to compile it')
    compile: CompileInfo | None = None
    toolchain: str | None = None
    runtime: str | None = Field(default=None, description='digest of the submission runtime the tests ran in')
    stopped_early: bool = Field(False, description='stop_on_first_failure cut the reported tests')
    tests: list[TestResult]


class BatchJudgeTestsRequest(_Identified):
    """`POST /judge/tests/batch`: many `/judge/tests` jobs at once."""

    jobs: Annotated[list[JudgeTestsRequest], Field(min_length=1)]


class BatchJudgeTestsResult(BaseModel):
    """Answer of `/judge/tests/batch`, jobs in request order."""

    sub_id: str
    results: list[JudgeTestsResult]
