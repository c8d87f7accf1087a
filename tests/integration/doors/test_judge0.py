"""Judge0 CE's door over real HTTP on the real stack: ``/submissions`` with and without ``wait``,
``base64_encoded`` and ``fields``, fetching by token (kept in Redis), batches, ``/languages``,
``/statuses``, ``/about``, ``/config_info``, Judge0's status ids and its 4xx answers (the official SDK
itself: ``tests/frameworks/test_door_sdks.py``)."""

from __future__ import annotations

import base64
import io
import time
import zipfile
from typing import Any

import pytest
import redis

from judge.transport.keys import KeySpace
from tests.support.helpers import request
from tests.support.processes.stack import Stack

pytestmark = pytest.mark.integration

PYTHON, CPP, C = 71, 52, 50


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def unb64(text: str | None) -> str | None:
    return None if text is None else base64.b64decode(text).decode()


def create(url: str, body: dict[str, Any], query: str = 'wait=true', expect: int = 201) -> dict[str, Any]:
    status, answer = request(f'{url}/submissions?{query}', body)
    assert status == expect, (status, answer)
    return answer  # type: ignore[no-any-return]


def fetch(url: str, token: str, query: str = '') -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        status, answer = request(f'{url}/submissions/{token}?{query}')
        assert status == 200, answer
        if answer['status']['id'] > 2 or time.monotonic() > deadline:
            return answer  # type: ignore[no-any-return]
        time.sleep(0.1)


def test_wait_true_answers_the_default_fields(gateway_url: str) -> None:
    answer = create(gateway_url, {'source_code': 'print(input())', 'language_id': PYTHON, 'stdin': 'hi'})
    assert set(answer) == {'token', 'time', 'memory', 'stdout', 'stderr', 'compile_output', 'message', 'status'}
    assert answer['status'] == {'id': 3, 'description': 'Accepted'} and answer['stdout'] == 'hi\n'
    assert answer['stderr'] is None and float(answer['time']) >= 0 and answer['memory'] > 0


def test_a_wait_true_submission_is_kept_for_its_token(gateway_url: str) -> None:
    answers = [create(gateway_url, {'source_code': f'print({i})', 'language_id': PYTHON}) for i in range(3)]
    for i, answer in enumerate(answers):  # at once (from the gateway's memory or Redis), then from Redis
        assert request(f'{gateway_url}/submissions/{answer["token"]}?fields=stdout')[1] == {'stdout': f'{i}\n'}
    time.sleep(0.2)
    tokens = ','.join(a['token'] for a in answers)
    status, got = request(f'{gateway_url}/submissions/batch?tokens={tokens}&fields=stdout')
    assert status == 200 and [s['stdout'] for s in got['submissions']] == ['0\n', '1\n', '2\n'], got


def test_statuses_follow_judge0(gateway_url: str) -> None:
    def status(code: str, language: int = PYTHON, **extra: Any) -> dict[str, Any]:
        body = {'source_code': code, 'language_id': language, **extra}
        return create(gateway_url, body, 'wait=true&fields=status,exit_code,exit_signal,message,compile_output')

    assert status('print(" 1 ")', expected_output=' 1')['status']['id'] == 3, "Judge0's rule: trailing spaces aside"
    assert status('print(" 1 ")', expected_output='1')['status']['id'] == 4, 'leading spaces count'
    assert status('while True: pass', cpu_time_limit=1)['status']['id'] == 5
    compile_error = status('int main( {', CPP)
    assert compile_error['status']['id'] == 6 and 'error' in compile_error['compile_output']
    segv = status('import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)')
    assert (segv['status']['id'], segv['exit_signal']) == (7, 11), segv
    assert status('import os, signal\nos.kill(os.getpid(), signal.SIGFPE)')['status']['id'] == 9
    assert status('import os\nos.abort()')['status']['id'] == 10
    nzec = status('raise SystemExit(3)')
    assert (nzec['status']['id'], nzec['exit_code'], nzec['message']) == (11, 3, 'Exited with error status 3')


def test_without_wait_a_token_then_the_result_by_token_with_every_field(gateway_url: str) -> None:
    body = {'source_code': b64('import sys\nprint(sys.argv[1:], open("data/x.txt").read())'), 'language_id': PYTHON}
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, 'w') as z:
        z.writestr('data/x.txt', 'zipped')
    body |= {'command_line_arguments': "a 'b c'", 'additional_files': base64.b64encode(archive.getvalue()).decode()}
    created = create(gateway_url, body, 'base64_encoded=true')
    assert set(created) == {'token'}
    answer = fetch(gateway_url, created['token'], 'base64_encoded=true&fields=*')
    assert answer['status']['id'] == 3 and unb64(answer['stdout']) == "['a', 'b c'] zipped\n"
    assert unb64(answer['source_code']).startswith('import sys') and answer['language'] == {
        'id': PYTHON,
        'name': answer['language']['name'],
    }
    assert answer['language']['name'].startswith('Python (3.') and answer['finished_at'].endswith('Z')
    assert answer['token'] == created['token'] and answer['wall_time'] is not None


def test_batches_are_created_and_fetched_by_tokens(gateway_url: str) -> None:
    subs = [{'source_code': f'print({i})', 'language_id': PYTHON} for i in range(3)]
    subs.append({'source_code': 'x', 'language_id': 9999})
    status, created = request(gateway_url + '/submissions/batch', {'submissions': subs})
    assert status == 201 and [set(c) for c in created[:3]] == [{'token'}] * 3, created
    assert created[3] == {'language_id': ["language with id 9999 doesn't exist"]}
    tokens = ','.join(c['token'] for c in created[:3]) + ',00000000-0000-4000-8000-000000000000'
    deadline = time.monotonic() + 30
    while True:
        status, got = request(f'{gateway_url}/submissions/batch?tokens={tokens}&fields=stdout,status')
        done = [s for s in got['submissions'][:3] if s['status']['id'] > 2]
        if len(done) == 3 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert [s['stdout'] for s in got['submissions'][:3]] == ['0\n', '1\n', '2\n'] and got['submissions'][3] is None


def test_results_are_kept_in_redis_for_the_configured_time(gateway_url: str, stack: Stack) -> None:
    token = create(gateway_url, {'source_code': 'print(5)', 'language_id': PYTHON})['token']
    client = redis.Redis.from_url(stack.redis_url)
    try:
        deadline = time.monotonic() + 2
        while (ttl := client.ttl(KeySpace().door_record(token))) < 0 and time.monotonic() < deadline:
            time.sleep(0.01)  # a wait=true answer is stored within milliseconds of being given
    finally:
        client.close()
    assert 3500 < ttl <= 3600, 'JUDGE_DOOR_RESULT_TTL_S (3600 by default)'
    assert fetch(gateway_url, token)['stdout'] == '5\n'


def test_languages_statuses_about_and_config(gateway_url: str) -> None:
    status, languages = request(gateway_url + '/languages')
    assert status == 200 and {lang['id'] for lang in languages} == {46, 50, 52, 60, 62, 63, 71, 73}
    status, one = request(gateway_url + '/languages/52')
    assert status == 200 and one['name'].startswith('C++ (GCC ') and one['source_file'] == 'main.cpp'
    assert request(gateway_url + '/languages/1')[0] == 404
    status, statuses = request(gateway_url + '/statuses')
    assert statuses[12] == {'id': 13, 'description': 'Internal Error'}
    assert request(gateway_url + '/about')[1]['version'] == '1.13.1'
    config = request(gateway_url + '/config_info')[1]
    assert config['enable_wait_result'] and not config['enable_network'] and config['cpu_time_limit'] > 0


@pytest.mark.parametrize(
    ('body', 'query', 'status', 'says'),
    [
        ({'language_id': PYTHON}, 'wait=true', 422, {'source_code': ["can't be blank"]}),
        ({'source_code': 'x', 'language_id': 3}, 'wait=true', 422, {'language_id': ["language with id 3 doesn't exist"]}),  # noqa: E501
        ({'source_code': '%%%', 'language_id': PYTHON}, 'base64_encoded=true', 422, {'source_code': ['is not valid base64']}),  # noqa: E501
        ({'source_code': 'x', 'language_id': PYTHON, 'enable_network': True}, '', 422, {'enable_network': ['setting network is not allowed']}),  # noqa: E501
        ({'source_code': 'x', 'language_id': 'python'}, '', 422, None),
        ({'source_code': 'x', 'language_id': PYTHON}, 'fields=stdout,nope', 400, {'error': 'invalid fields: [nope]'}),
    ],
)  # fmt: skip
def test_bad_submissions_get_judge0s_answers(
    gateway_url: str, body: dict[str, Any], query: str, status: int, says: dict[str, Any] | None
) -> None:
    got, answer = request(f'{gateway_url}/submissions?{query}', body)
    assert got == status, answer
    if says is not None:
        assert answer == says
    else:
        assert set(answer) == {'language_id'} and isinstance(answer['language_id'], list)


def test_unknown_token_and_empty_batches(gateway_url: str) -> None:
    assert request(gateway_url + '/submissions/00000000-0000-4000-8000-000000000000') == (404, {'error': 'not found'})
    assert request(gateway_url + '/submissions/batch', {'submissions': []})[0] == 400
    assert request(gateway_url + '/submissions/batch?tokens=')[0] == 400
