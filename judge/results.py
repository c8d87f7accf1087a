"""Every result the judge answers with is built here, in one shape.

`build_result` makes a `ResultDict` (`SubmissionResult`'s fields, all of them, always) from a
verdict and what the run produced; `infra_result` is its form for submissions the infrastructure
could not judge.  The HTTP views are derived from it: `judge_view` (no streams) for the `/judge*`
routes and `fold_tests` for `/judge/tests`.  ``tests/unit/verdicts/test_results.py`` holds each to its declared
response model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from judge.contracts import CompileDict, JudgeResultDict, JudgeTestsRequest, ResultDict, Verdict
from judge.verdict import pick, reason_for

_RAN = frozenset({Verdict.ACCEPTED, Verdict.WRONG_ANSWER})
_STREAMS = ('stdout', 'stderr')


def build_result(
    sub_id: str,
    verdict: Verdict,
    *,
    cost_s: float = 0.0,
    stdout: str | None = None,
    stderr: str | None = None,
    exit_code: int | None = None,
    stdout_truncated: bool = False,
    stderr_truncated: bool = False,
    error: str | None = None,
    toolchain: str | None = None,
    runtime: str | None = None,
    compile: CompileDict | None = None,
) -> ResultDict:
    """The result of one submission.

    ``success`` is an accepted verdict; ``run_success`` that the program ran to its end (accepted
    or a wrong answer); ``reason`` is upstream's for the verdict (`judge.verdict.reason_for`).
    """
    return {
        'sub_id': sub_id,
        'success': verdict is Verdict.ACCEPTED,
        'run_success': verdict in _RAN,
        'cost': round(cost_s, 6),
        'stdout': stdout,
        'stderr': stderr,
        'reason': reason_for(verdict).value,
        'verdict': verdict.value,
        'exit_code': exit_code,
        'stdout_truncated': stdout_truncated,
        'stderr_truncated': stderr_truncated,
        'error': error,
        'toolchain': toolchain,
        'runtime': runtime,
        'compile_cached': None if compile is None else compile['cached'],
        'compile': compile,
    }


def infra_result(sub_id: str, verdict: Verdict, cost_s: float = 0.0, error: str | None = None) -> ResultDict:
    """A submission the infrastructure could not judge (`queue_timeout` or `internal_error`).

    Never a wrong answer: `reason` says why, and the streams are null as upstream has them.
    """
    return build_result(sub_id, verdict, cost_s=cost_s, error=error)


def internal_error(sub_id: str, error: str, cost_s: float = 0.0) -> ResultDict:
    """An `internal_error` result with its detail."""
    return infra_result(sub_id, Verdict.INTERNAL_ERROR, cost_s, error)


def queue_timeout(sub_id: str, waited_s: float) -> ResultDict:
    """Upstream's answer for a submission that did not finish before its deadline."""
    return infra_result(sub_id, Verdict.QUEUE_TIMEOUT, waited_s)


def judge_view(result: ResultDict) -> JudgeResultDict:
    """The `/judge*` routes' view of a result: everything but the output streams."""
    return cast(JudgeResultDict, {k: v for k, v in result.items() if k not in _STREAMS})


def fold_tests(job: JudgeTestsRequest, results: Sequence[ResultDict]) -> dict[str, Any]:
    """Fold the per-test results of one `/judge/tests` job into a `JudgeTestsResult` dict.

    The overall verdict is the one of highest precedence among the tests (`judge.verdict.ORDER`),
    so a compile error or an infrastructure failure is never hidden behind a wrong answer.
    ``passed``/``pass_rate`` always count every test, even when ``stop_on_first_failure`` cuts the
    reported list after the first failure.
    """
    tests: list[dict[str, Any]] = []
    for i, result in enumerate(results):
        view: dict[str, Any] = {k: v for k, v in result.items() if k not in _STREAMS and k != 'compile'}
        view['index'] = i
        tests.append(view)
    verdicts = {Verdict(t.get('verdict') or Verdict.INTERNAL_ERROR.value) for t in tests}
    passed = sum(1 for t in tests if t.get('success'))
    total = len(tests)
    compiles = [c for r in results if (c := r.get('compile')) is not None]
    compile_info = next((c for c in compiles if not c['cached']), compiles[0] if compiles else None)
    stopped = False
    if job.stop_on_first_failure:
        first = next((i for i, t in enumerate(tests) if not t.get('success')), None)
        if first is not None and first + 1 < total:
            tests, stopped = tests[: first + 1], True
    return {
        'sub_id': job.sub_id,
        'verdict': pick(verdicts).value,
        'passed': passed,
        'total': total,
        'pass_rate': passed / total if total else 0.0,
        'compile_cached': all(c['cached'] for c in compiles) if compiles else None,
        'compile': compile_info,
        'toolchain': next((r['toolchain'] for r in results if r.get('toolchain')), None),
        'runtime': next((r['runtime'] for r in results if r.get('runtime')), None),
        'stopped_early': stopped,
        'tests': tests,
    }
