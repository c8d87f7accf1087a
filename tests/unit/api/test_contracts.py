"""The HTTP contracts (`judge.contracts`): submissions, ids, languages and seeds are validated on the way in."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from pydantic import BaseModel, ValidationError

from judge.contracts import BatchJudgeTestsRequest, BatchSubmission, JudgeTestsRequest, Language, Submission


def test_submission_contract() -> None:
    sub = Submission.model_validate({'type': 'python', 'solution': 'x', 'sub_id': '', 'extra': 1})
    assert sub.sub_id and len(sub.sub_id) == 36
    with pytest.raises(ValidationError):
        Submission.model_validate({'type': 'math', 'solution': 'x'})
    with pytest.raises(ValidationError):
        BatchSubmission.model_validate({'submissions': []})


_JOB = {'type': 'python', 'solution': 'x', 'tests': [{'expected_output': '1'}]}


_REQUESTS: dict[str, tuple[type[BaseModel], dict[str, Any]]] = {
    'submission': (Submission, {'type': 'python', 'solution': 'x'}),
    'batch': (BatchSubmission, {'submissions': [{'type': 'python', 'solution': 'x'}]}),
    'tests': (JudgeTestsRequest, _JOB),
    'tests_batch': (BatchJudgeTestsRequest, {'jobs': [_JOB]}),
}


@pytest.mark.parametrize('kind', sorted(_REQUESTS))
def test_every_request_fills_and_checks_its_id(kind: str) -> None:
    model, body = _REQUESTS[kind]
    ids = {model.model_validate(body | {'sub_id': given}).model_dump()['sub_id'] for given in (None, '', None)}
    assert len(ids) == 3 and all(i and len(i) == 36 for i in ids)  # a fresh uuid4 string each time
    assert model.model_validate(body | {'sub_id': 'mine', 'unknown': 1}).model_dump()['sub_id'] == 'mine'
    with pytest.raises(ValidationError, match='lone surrogate'):
        model.model_validate(body | {'sub_id': 'a\ud800b'})


def test_the_contract_names_every_executor_and_only_them() -> None:
    from judge.executors import EXECUTORS

    assert set(get_args(Language)) == set(EXECUTORS)


def test_the_seed_is_optional_and_bounded_in_the_api() -> None:
    assert 'seed' not in Submission(type='python', solution='print(1)').payload()
    assert Submission(type='python', solution='print(1)', seed=5).payload()['seed'] == 5
    for bad in (-1, 2**32, 'x'):
        with pytest.raises(ValueError):
            Submission(type='python', solution='print(1)', seed=bad)
