"""`POST /judge/tests` through the real stack: checkers, compile once, stop_on_first_failure, batch form."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from judge.checker import get_checker
from tests.support.helpers import post, request

pytestmark = [pytest.mark.integration, pytest.mark.both_paths]

ECHO = 'import sys\nsys.stdout.write(sys.stdin.read())\n'
CPP_SQUARE = '#include <bits/stdc++.h>\n// {tag}\nint main(){{long long x;std::cin>>x;std::cout<<x*x<<"\\n";}}\n'


def _job(tests: list[tuple[str, str]], checker: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        'type': 'python',
        'solution': ECHO,
        'tests': [{'input': i, 'expected_output': e} for i, e in tests],
    }
    if checker is not None:
        body['checker'] = checker
    return {**body, **extra}


# (checker, [(program output, expected, accepted?)])
CHECKER_CASES: list[tuple[str | None, list[tuple[str, str, bool]]]] = [
    (None, [('5\n', '5', True), ('  5  \n\n', '5', True), ('5 6', '5  6', False)]),
    ('strip', [('a b\n', 'a b', True), ('a  b', 'a b', False)]),
    ('exact', [('5\n', '5\n', True), ('5\n', '5', False), ('5', '5', True)]),
    ('tokens', [('1   2\n3\n', '1 2 3', True), ('1 2', '1 2 3', False), ('1 2 4', '1 2 3', False)]),
    ('float:1e-6', [('0.3333333', '0.33333333', True), ('1.0 2', '1 2.0000000001', True), ('0.3334', '0.3333', False)]),
    ('float:0.01', [('100.5', '100', True), ('1.02', '1', False), ('abc 1', 'abc 1.001', True), ('x', 'y', False)]),
]


@pytest.fixture(scope='module')
def checker_answers(gateway_url: str) -> list[dict[str, Any]]:
    jobs = [_job([(out, exp) for out, exp, _ in cases], checker) for checker, cases in CHECKER_CASES]
    answer = post(gateway_url, '/judge/tests/batch', {'jobs': jobs})
    results: list[dict[str, Any]] = answer['results']
    return results


@pytest.mark.parametrize('case', range(len(CHECKER_CASES)), ids=[str(c[0]) for c in CHECKER_CASES])
def test_every_checker(checker_answers: list[dict[str, Any]], case: int) -> None:
    checker, cases = CHECKER_CASES[case]
    job = checker_answers[case]
    want = [ok for _, _, ok in cases]
    assert [t['success'] for t in job['tests']] == want, job
    assert [t['verdict'] for t in job['tests']] == ['accepted' if ok else 'wrong_answer' for ok in want]
    assert all(t['run_success'] for t in job['tests'])
    assert job['passed'] == sum(want) and job['total'] == len(want)
    assert job['verdict'] == ('accepted' if all(want) else 'wrong_answer')
    local = get_checker(checker or 'strip')  # the worker's checker agrees with the library's
    assert [local(out, exp) for out, exp, _ in cases] == want


def test_cpp_compiles_once_for_many_tests(gateway_url: str) -> None:
    solution = CPP_SQUARE.format(tag=uuid.uuid4().hex)  # a source no worker has seen: a cold compile
    tests = [{'input': str(i), 'expected_output': str(i * i)} for i in range(10)]
    job = post(gateway_url, '/judge/tests', {'type': 'cpp', 'solution': solution, 'tests': tests})
    assert job['verdict'] == 'accepted' and job['passed'] == 10 and job['pass_rate'] == 1.0, job
    assert job['compile_cached'] is False and job['compile']['ok'] and job['compile']['cached'] is False
    assert [t['compile_cached'] for t in job['tests']].count(False) == 1  # the flock: one compile per node
    assert [t['index'] for t in job['tests']] == list(range(10))
    again = post(gateway_url, '/judge/tests', {'type': 'cpp', 'solution': solution, 'tests': tests[:3]})
    assert again['compile_cached'] is True and all(t['compile_cached'] for t in again['tests'])


def test_stop_on_first_failure_cuts_the_report(gateway_url: str) -> None:
    tests = [('1', '1'), ('2', '2'), ('3', 'x'), ('4', '4'), ('5', 'y')]
    full = post(gateway_url, '/judge/tests', _job(tests))
    assert len(full['tests']) == 5 and full['stopped_early'] is False
    cut = post(gateway_url, '/judge/tests', _job(tests, stop_on_first_failure=True))
    assert [t['verdict'] for t in cut['tests']] == ['accepted', 'accepted', 'wrong_answer']
    assert cut['stopped_early'] is True
    assert (cut['passed'], cut['total'], cut['verdict']) == (3, 5, 'wrong_answer')  # every test still counts
    ok = post(gateway_url, '/judge/tests', _job([('1', '1')], stop_on_first_failure=True))
    assert ok['stopped_early'] is False and ok['verdict'] == 'accepted'


@pytest.mark.parametrize(
    'body',
    [
        {'type': 'python', 'solution': 'x', 'tests': []},
        {'type': 'python', 'solution': 'x', 'tests': [{'input': ''}]},
        {'type': 'cobol', 'solution': 'x', 'tests': [{'expected_output': ''}]},
        {'type': 'python', 'solution': 'x', 'tests': [{'expected_output': ''}], 'checker': 'regex'},
        {'type': 'python', 'solution': 'x', 'tests': [{'expected_output': ''}], 'checker': 'float:abc'},
        {'type': 'python', 'solution': 'x', 'tests': [{'expected_output': ''}], 'checker': 'float:-1'},
    ],
)
def test_invalid_requests_get_422(gateway_url: str, body: dict[str, Any]) -> None:
    status, _ = request(gateway_url + '/judge/tests', body)
    assert status == 422
    status, _ = request(gateway_url + '/judge/tests/batch', {'jobs': [body]})
    assert status == 422
