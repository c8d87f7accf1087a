"""Every language through the real stack: a+b from stdin, compile error, runtime error, timeout, memory.

One `/judge/tests/batch` call carries every case, so the two test workers judge them in parallel
and each solution compiles once (the loops hit the session's 4 s limit, so they dominate).
"""

from __future__ import annotations

from typing import Any, get_args

import pytest

from judge.contracts import Language
from tests.support.helpers import post, request
from tests.support.lang_programs import AB, COMPILE_ERROR, MODE

pytestmark = pytest.mark.integration

MODES = ('ok', 'crash', 'loop', 'hog')
LANGUAGES: tuple[str, ...] = get_args(Language)
COMPILED_LANGUAGES = ('cpp', 'c', 'java', 'go', 'rust')


@pytest.fixture(scope='module')
def judged(gateway_url: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(language, job kind) -> that job's `/judge/tests` answer."""
    jobs: list[dict[str, Any]] = []
    keys: list[tuple[str, str]] = []
    for lang in LANGUAGES:
        tests = [
            {'input': '2 3\n', 'expected_output': '5\n'},
            {'input': '1000000000000 -1', 'expected_output': '999999999999'},
            {'input': '1 1', 'expected_output': '3'},
        ]
        jobs.append({'type': lang, 'solution': AB[lang], 'tests': tests})
        keys.append((lang, 'ab'))
        jobs.append(
            {'type': lang, 'solution': MODE[lang], 'tests': [{'input': m, 'expected_output': 'ok'} for m in MODES]}
        )
        keys.append((lang, 'mode'))
        if lang in COMPILE_ERROR:
            jobs.append({'type': lang, 'solution': COMPILE_ERROR[lang], 'tests': [{'expected_output': 'x'}] * 2})
            keys.append((lang, 'ce'))
    answer = post(gateway_url, '/judge/tests/batch', {'jobs': jobs}, timeout_s=300)
    assert len(answer['results']) == len(jobs)
    return dict(zip(keys, answer['results'], strict=True))


@pytest.fixture(scope='module')
def tier(gateway_url: str) -> str:
    status, body = request(gateway_url + '/status')
    assert status == 200
    return str(body['isolation'])


@pytest.mark.parametrize('lang', LANGUAGES)
def test_a_plus_b(judged: dict[tuple[str, str], dict[str, Any]], lang: str) -> None:
    job = judged[lang, 'ab']
    verdicts = [t['verdict'] for t in job['tests']]
    assert verdicts == ['accepted', 'accepted', 'wrong_answer'], job
    assert (job['passed'], job['total'], job['verdict']) == (2, 3, 'wrong_answer')
    assert job['pass_rate'] == pytest.approx(2 / 3)
    assert job['toolchain'], job
    assert all(t['toolchain'] == job['toolchain'] for t in job['tests'])
    if lang in COMPILED_LANGUAGES:
        assert job['compile']['ok'] is True
        assert [t['compile_cached'] for t in job['tests']].count(False) <= 1  # compiled once
    else:
        assert job['compile'] is None and job['compile_cached'] is None


@pytest.mark.parametrize('lang', LANGUAGES)
def test_runtime_error_timeout_and_memory(judged: dict[tuple[str, str], dict[str, Any]], lang: str, tier: str) -> None:
    job = judged[lang, 'mode']
    got = {m: t['verdict'] for m, t in zip(MODES, job['tests'], strict=True)}
    assert got['ok'] == 'accepted', job['tests'][0]
    assert got['crash'] == 'runtime_error', job['tests'][1]
    assert got['loop'] == 'time_limit', job['tests'][2]
    assert job['tests'][2]['reason'] == 'worker_timeout'
    memory = {'memory_limit'} if tier in ('namespaces', 'landlock') else {'memory_limit', 'runtime_error'}
    assert got['hog'] in memory, job['tests'][3]
    assert job['verdict'] == 'time_limit'  # judge.verdict precedence: time > memory > runtime error
    assert job['passed'] == 1


@pytest.mark.parametrize('lang', sorted(COMPILE_ERROR))
def test_compile_error_fails_every_test(judged: dict[tuple[str, str], dict[str, Any]], lang: str) -> None:
    job = judged[lang, 'ce']
    assert job['verdict'] == 'compile_error'
    assert [t['verdict'] for t in job['tests']] == ['compile_error', 'compile_error']
    assert job['passed'] == 0 and job['pass_rate'] == 0.0
    assert job['compile']['ok'] is False
    assert ('error' in job['compile']['stderr'].lower()) or ('not used' in job['compile']['stderr']), job['compile']


def test_run_route_takes_every_language(gateway_url: str) -> None:
    subs = [{'type': lang, 'solution': AB[lang], 'input': '20 22', 'expected_output': '42'} for lang in LANGUAGES]
    answer = post(gateway_url, '/run/batch', {'submissions': subs}, timeout_s=120)
    assert [r['verdict'] for r in answer['results']] == ['accepted'] * len(LANGUAGES), answer
    assert all(r['stdout'].strip() == '42' and r['toolchain'] for r in answer['results'])


def test_status_reports_every_toolchain(gateway_url: str) -> None:
    status, body = request(gateway_url + '/status')
    assert status == 200
    assert body['nodes'], body
    toolchains = body['nodes'][0]['toolchains']
    assert set(toolchains) == set(LANGUAGES)
    assert all(toolchains[lang] for lang in LANGUAGES), toolchains
    assert 'javac' in toolchains['java'] and 'go1' in toolchains['go'] and 'rustc' in toolchains['rust']
