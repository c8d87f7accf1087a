"""Request and result types, and nothing else: the judge's wire contracts.

* `judge.contracts.task`: the task name and the typed dicts that travel from the gateway to a worker
  and back (`Job`, `RunPayload`, `ResultDict`), with the `Verdict` and `ResultReason` enums.
* `judge.contracts.http`: the gateway's pydantic request and response models (upstream's shapes plus
  additive fields).

Every name is importable from here.  Nothing in this package imports Celery.
"""

from __future__ import annotations

from judge.contracts.http import (
    BatchJudgeResult,
    BatchJudgeTestsRequest,
    BatchJudgeTestsResult,
    BatchSubmission,
    BatchSubmissionResult,
    CompileInfo,
    JudgeResult,
    JudgeTestsRequest,
    JudgeTestsResult,
    StatusResult,
    Submission,
    SubmissionResult,
    TestCase,
    TestResult,
    new_id,
)
from judge.contracts.task import (
    MANAGER_MAX_PROCESSES,
    RUN_TASK,
    CompileDict,
    FullResultDict,
    Job,
    JudgeResultDict,
    Language,
    ManagerDict,
    ResultDict,
    ResultReason,
    RunPayload,
    UsageDict,
    Verdict,
)

__all__ = [
    'BatchJudgeResult',
    'BatchJudgeTestsRequest',
    'BatchJudgeTestsResult',
    'BatchSubmission',
    'BatchSubmissionResult',
    'CompileDict',
    'CompileInfo',
    'FullResultDict',
    'Job',
    'JudgeResult',
    'JudgeResultDict',
    'JudgeTestsRequest',
    'JudgeTestsResult',
    'Language',
    'RUN_TASK',
    'ResultDict',
    'ResultReason',
    'MANAGER_MAX_PROCESSES',
    'ManagerDict',
    'RunPayload',
    'StatusResult',
    'Submission',
    'SubmissionResult',
    'TestCase',
    'TestResult',
    'UsageDict',
    'Verdict',
    'new_id',
]
