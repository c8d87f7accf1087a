"""Every result shape comes from `judge.results` and matches its declared response model exactly."""

from __future__ import annotations

from typing import Any, get_type_hints

import pytest

from judge.contracts import (
    CompileDict,
    JudgeResult,
    JudgeResultDict,
    JudgeTestsRequest,
    JudgeTestsResult,
    ResultDict,
    SubmissionResult,
    TestResult,
    Verdict,
)
from judge.results import build_result, fold_tests, infra_result, internal_error, judge_view, queue_timeout

COMPILED: CompileDict = {'ok': True, 'cached': False, 'cost': 0.5, 'stderr': 'warning', 'stderr_truncated': False}

EVERY_KIND: dict[str, ResultDict] = {
    'accepted': build_result('a', Verdict.ACCEPTED, cost_s=0.01, stdout='45\n', stderr='', exit_code=0),
    'wrong': build_result('w', Verdict.WRONG_ANSWER, stdout='4', stderr='', exit_code=0, toolchain='Python 3.11'),
    'runtime': build_result('r', Verdict.RUNTIME_ERROR, stdout='', stderr='Traceback', exit_code=1),
    'time': build_result('t', Verdict.TIME_LIMIT, cost_s=4.0, stdout='Suicide from timeout.\n', exit_code=-9),
    'memory': build_result('m', Verdict.MEMORY_LIMIT, stderr='MemoryError', exit_code=1, stderr_truncated=True),
    'output': build_result('o', Verdict.OUTPUT_LIMIT, stdout='x' * 10, stdout_truncated=True, exit_code=-9),
    'compiled': build_result('c', Verdict.ACCEPTED, stdout='7\n', stderr='', exit_code=0, compile=COMPILED),
    'compile_error': build_result('ce', Verdict.COMPILE_ERROR, stdout='', stderr='error', compile=COMPILED),
    'internal': internal_error('i', 'SandboxError: slot gone', 0.2),
    'queue_timeout': queue_timeout('q', 19.0),
}


@pytest.mark.parametrize('kind', sorted(EVERY_KIND))
def test_every_result_has_exactly_the_models_fields(kind: str) -> None:
    result = EVERY_KIND[kind]
    assert set(result) == set(SubmissionResult.model_fields)
    assert SubmissionResult.model_validate(result).model_dump(mode='json') == result
    view = judge_view(result)
    assert set(view) == set(JudgeResult.model_fields)
    assert JudgeResult.model_validate(view).model_dump(mode='json') == view


def test_the_typed_dicts_declare_the_models_fields() -> None:
    assert set(get_type_hints(ResultDict)) == set(SubmissionResult.model_fields)
    assert set(get_type_hints(JudgeResultDict)) == set(JudgeResult.model_fields)


def test_flags_follow_the_verdict() -> None:
    assert [EVERY_KIND[k]['success'] for k in ('accepted', 'wrong', 'runtime')] == [True, False, False]
    assert EVERY_KIND['wrong']['run_success'] and not EVERY_KIND['time']['run_success']
    assert EVERY_KIND['time']['reason'] == 'worker_timeout' and EVERY_KIND['memory']['reason'] == ''
    assert EVERY_KIND['compiled']['compile_cached'] is False and EVERY_KIND['accepted']['compile_cached'] is None
    for kind, reason in (('internal', 'internal_error'), ('queue_timeout', 'queue_timeout')):
        result = EVERY_KIND[kind]
        assert (result['reason'], result['verdict'], result['stdout'], result['run_success']) == (
            reason,
            reason,
            None,
            False,
        )
    assert EVERY_KIND['internal']['error'] == 'SandboxError: slot gone'
    assert infra_result('x', Verdict.QUEUE_TIMEOUT, 1.23456789)['cost'] == 1.234568


def test_folded_tests_match_their_model() -> None:
    job = JudgeTestsRequest.model_validate(
        {'type': 'cpp', 'solution': 's', 'tests': [{'expected_output': ''}] * 4, 'stop_on_first_failure': True}
    )
    results = [EVERY_KIND['compiled'], EVERY_KIND['wrong'], EVERY_KIND['accepted'], EVERY_KIND['internal']]
    folded: dict[str, Any] = fold_tests(job, results)
    assert JudgeTestsResult.model_validate(folded).model_dump(mode='json', exclude={'tests'}) == {
        k: v for k, v in folded.items() if k != 'tests'
    }
    assert set(folded) == set(JudgeTestsResult.model_fields)
    for test in folded['tests']:
        assert set(test) <= set(TestResult.model_fields), set(test) - set(TestResult.model_fields)
        TestResult.model_validate(test)
    assert folded['verdict'] == 'internal_error'  # an infrastructure failure is never hidden
    assert (folded['passed'], folded['total'], folded['stopped_early'], len(folded['tests'])) == (2, 4, True, 2)
    assert folded['compile'] == COMPILED and folded['compile_cached'] is False


def test_summary_precedence_without_a_stack() -> None:
    job = JudgeTestsRequest.model_validate({'type': 'cpp', 'solution': 's', 'tests': [{'expected_output': ''}] * 3})

    def compiled(cached: bool) -> Any:
        return {'ok': True, 'cached': cached, 'cost': 0.1, 'stderr': '', 'stderr_truncated': False}

    results = [
        build_result('a', Verdict.WRONG_ANSWER, compile=compiled(True)),
        build_result('b', Verdict.TIME_LIMIT, compile=compiled(False)),
        build_result('c', Verdict.ACCEPTED, stdout='x', compile=compiled(True)),
    ]
    out = fold_tests(job, results)
    assert out['verdict'] == 'time_limit' and out['passed'] == 1 and out['total'] == 3
    assert out['compile_cached'] is False and out['compile']['cached'] is False
    assert 'stdout' not in out['tests'][2] and 'compile' not in out['tests'][0]
