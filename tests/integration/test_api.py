"""Upstream code-judge's scenarios, over real HTTP against a real gateway, Redis and prefork worker."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from typing import Any

import pytest
import redis

from judge.contracts import JudgeResult, SubmissionResult
from judge.transport.keys import KeySpace
from tests.support.helpers import post, request
from tests.support.processes.stack import TIME_LIMIT_S, Stack

pytestmark = [pytest.mark.integration, pytest.mark.both_paths]

CPP_SLEEP_PRINT = '#include <unistd.h>\n#include <cstdio>\nint main(){sleep(%d);printf("a\\n");return 0;}\n'
CPP_PRINT_A = '#include <cstdio>\nint main(){printf("a\\n");return 0;}\n'
PY_ECHO = 'print(input())'


def _one(url: str, kind: str, sub: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = post(url, f'/{kind}', sub)
    if kind == 'judge':
        assert 'stdout' not in result and 'stderr' not in result
    else:
        assert 'stdout' in result and 'stderr' in result
    return result


@pytest.mark.parametrize('kind', ['run', 'judge'])
def test_python_ok_and_wrong(gateway_url: str, kind: str) -> None:
    ok = _one(gateway_url, kind, {'type': 'python', 'solution': PY_ECHO, 'input': 'a', 'expected_output': 'a'})
    assert (ok['success'], ok['run_success'], ok['reason'], ok['verdict']) == (True, True, '', 'accepted')
    wrong = _one(gateway_url, kind, {'type': 'python', 'solution': PY_ECHO, 'input': 'a', 'expected_output': 'b'})
    assert (wrong['success'], wrong['run_success'], wrong['reason'], wrong['verdict']) == (
        False,
        True,
        '',
        'wrong_answer',
    )


def test_success_compares_stripped_whole_stdout(gateway_url: str) -> None:
    r = post(gateway_url, '/run', {'type': 'python', 'solution': 'print("  45 ")', 'expected_output': '\n45\n\n'})
    assert r['success'] is True and r['stdout'] == '  45 \n'


@pytest.mark.parametrize('kind', ['run', 'judge'])
def test_cpp_ok_wrong_and_compile_error(gateway_url: str, kind: str) -> None:
    ok = _one(gateway_url, kind, {'type': 'cpp', 'solution': CPP_SLEEP_PRINT % 1, 'expected_output': 'a'})
    assert ok['success'] and ok['run_success']
    wrong = _one(gateway_url, kind, {'type': 'cpp', 'solution': CPP_PRINT_A, 'expected_output': 'b'})
    assert (wrong['success'], wrong['run_success'], wrong['verdict']) == (False, True, 'wrong_answer')
    bad = _one(gateway_url, kind, {'type': 'cpp', 'solution': 'int main( { return 0; }'})
    assert (bad['success'], bad['run_success'], bad['reason'], bad['verdict']) == (False, False, '', 'compile_error')
    if kind == 'run':
        assert 'error' in bad['stderr'] and bad['stdout'] == ''


def test_timeouts_python_and_cpp(gateway_url: str) -> None:
    subs = [
        {'type': 'python', 'solution': 'while True: pass'},
        {'type': 'python', 'solution': 'import time\ntime.sleep(100)'},
        {'type': 'python', 'solution': 'import signal, time\nsignal.alarm(0)\ntime.sleep(100)'},
        {'type': 'cpp', 'solution': CPP_SLEEP_PRINT % 100},
        {'type': 'cpp', 'solution': 'int main(){volatile long x=0; for(;;) x++;}'},
    ]
    start = time.monotonic()
    results = post(gateway_url, '/run/batch', {'type': 'batch', 'submissions': subs})['results']
    elapsed = time.monotonic() - start
    for r in results:
        assert (r['success'], r['run_success'], r['reason'], r['verdict']) == (
            False,
            False,
            'worker_timeout',
            'time_limit',
        ), r
        assert r['stdout'].strip() == 'Suicide from timeout.'
        assert TIME_LIMIT_S - 0.5 <= r['cost'] <= TIME_LIMIT_S + 2
    assert elapsed < 3 * TIME_LIMIT_S + 10  # 5 items on 2 slots, each cut at the limit


@pytest.mark.parametrize('kind', ['run', 'judge'])
def test_python_missing_input_is_eof(gateway_url: str, kind: str) -> None:
    for missing in ('', None):
        sub = {'type': 'python', 'solution': PY_ECHO, 'input': missing}
        r = _one(gateway_url, kind, sub)
        assert (r['success'], r['run_success'], r['verdict']) == (False, False, 'runtime_error')
        assert r['cost'] < 2  # EOFError at once, not a wait on the worker's stdin
        if kind == 'run':
            assert 'EOFError' in r['stderr']


@pytest.mark.parametrize('route', ['batch', 'long-batch'])
@pytest.mark.parametrize('kind', ['run', 'judge'])
def test_batch_results_in_order(gateway_url: str, kind: str, route: str) -> None:
    subs = []
    for i in range(12):
        if i % 3 == 0:
            subs.append({'type': 'python', 'solution': f'print({i})', 'expected_output': str(i)})
        elif i % 3 == 1:
            subs.append({'type': 'python', 'solution': PY_ECHO, 'input': ''})
        else:
            subs.append({'type': 'cpp', 'solution': CPP_PRINT_A, 'expected_output': 'a', 'sub_id': f'mine-{i}'})
    body = post(gateway_url, f'/{kind}/{route}', {'type': 'batch', 'sub_id': 'b1', 'submissions': subs})
    assert body['sub_id'] == 'b1'
    assert len(body['results']) == len(subs)
    for i, r in enumerate(body['results']):
        assert r['success'] is (i % 3 != 1), (i, r)
        if kind == 'run' and i % 3 == 0:
            assert r['stdout'] == f'{i}\n'
        if i % 3 == 2:
            assert r['sub_id'] == f'mine-{i}'


def test_multi_process_child_is_cut_and_killed(gateway_url: str) -> None:
    marker = f'sleep {1000 + int(time.time()) % 1000}.5'
    solution = (
        'import multiprocessing, subprocess, time\n'
        f'subprocess.Popen({marker.split()!r})\n'
        f'subprocess.Popen({marker.split()!r}, start_new_session=True)\n'
        'p = multiprocessing.Process(target=time.sleep, args=(100,))\n'
        'p.start(); p.join()\n'
    )
    r = post(gateway_url, '/run', {'type': 'python', 'solution': solution})
    assert (r['success'], r['run_success'], r['reason']) == (False, False, 'worker_timeout')
    time.sleep(0.5)
    left = subprocess.run(['pgrep', '-f', marker], capture_output=True, text=True).stdout.split()
    assert left == [], f'processes survived the execution: {left}'


def test_file_io_in_workdir(gateway_url: str) -> None:
    sol = 'open("test.txt","w").write("x")\nprint(open("test.txt").read())'
    r = post(gateway_url, '/run', {'type': 'python', 'solution': sol, 'expected_output': 'x'})
    assert r['success'] is True


def test_sub_id_generated_when_empty(gateway_url: str) -> None:
    r = post(gateway_url, '/run', {'type': 'python', 'solution': 'print(1)', 'sub_id': ''})
    assert len(r['sub_id']) == 36
    r = post(gateway_url, '/run', {'type': 'python', 'solution': 'print(1)', 'sub_id': 'given'})
    assert r['sub_id'] == 'given'


def test_output_is_returned_verbatim_even_with_markers_and_bad_utf8(gateway_url: str) -> None:
    sol = 'import sys\nprint("@@E @@D1.0 Suicide")\nsys.stdout.flush()\nsys.stdout.buffer.write(b"\\xff\\xfeok\\n")'
    r = post(gateway_url, '/run', {'type': 'python', 'solution': sol})
    assert r['success'] and r['reason'] == ''
    assert r['stdout'].startswith('@@E @@D1.0 Suicide\n')
    assert r['stdout'].endswith('\ufffd\ufffdok\n')


def test_truncation_and_flags(gateway_url: str) -> None:
    sol = 'import sys\nprint("x" * 5000)\nprint("y" * 3000, file=sys.stderr)'
    r = post(gateway_url, '/run', {'type': 'python', 'solution': sol})
    assert r['success']
    assert r['stdout'] == 'x' * 1000 and r['stdout_truncated'] is True
    assert r['stderr'] == 'y' * 1000 and r['stderr_truncated'] is True


def test_huge_output_is_an_output_limit_not_a_wrong_answer(gateway_url: str) -> None:
    sol = 'import sys\nwhile True: sys.stdout.write("z" * 65536)'
    r = post(gateway_url, '/run', {'type': 'python', 'solution': sol, 'expected_output': 'zz'})
    assert (r['success'], r['run_success'], r['verdict'], r['reason']) == (False, False, 'output_limit', '')
    assert len(r['stdout']) == 1000


def test_memory_bomb_is_a_memory_limit(gateway_url: str) -> None:
    sol = 'x = bytearray(2 * 1024 ** 3)\nprint(len(x))'
    r = post(gateway_url, '/run', {'type': 'python', 'solution': sol, 'expected_output': '1'})
    assert (r['success'], r['run_success'], r['verdict']) == (False, False, 'memory_limit')


@pytest.mark.parametrize(
    'body,field',
    [
        ({'type': 'cobol', 'solution': 'x'}, 'type'),
        ({'type': 'python'}, 'solution'),
        ({'type': 'python', 'solution': 3}, 'solution'),
    ],
)
def test_invalid_submissions_get_422(gateway_url: str, body: dict[str, Any], field: str) -> None:
    status, payload = request(gateway_url + '/run', body)
    assert status == 422
    assert any(field in err['loc'] for err in payload['detail'])


def test_invalid_json_and_empty_batch_get_422(gateway_url: str) -> None:
    status, payload = request(gateway_url + '/run', raw=b'{"type": "python", "solution": ')
    assert status == 422 and payload['detail'][0]['type'] == 'json_invalid'
    status, payload = request(gateway_url + '/run/batch', {'type': 'batch', 'submissions': []})
    assert status == 422 and payload['detail'][0]['type'] == 'too_short'


def test_ping_and_status(gateway_url: str, transport: str) -> None:
    assert request(gateway_url + '/ping') == (200, 'pong')
    deadline = time.monotonic() + 20
    while True:  # under load, a worker may miss a short liveness poll, or not have published its slots yet
        status, body = request(gateway_url + '/status')
        if (body.get('num_workers') == 2 and body.get('isolation')) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert status == 200 and body['transport'] == transport
    assert body['num_workers'] == 2 and body['queue'] == 0
    assert body['isolation'] in ('namespaces', 'landlock', 'uid')
    assert set(body['queues']) == {'judge.run', 'judge.batch', 'judge.long'}
    assert body['nodes'][0]['toolchains']['python'].startswith('Python 3')


def test_answers_have_exactly_the_declared_fields(gateway_url: str) -> None:
    """Every answer, judged or not, has the declared model's fields: one builder (`judge.results`)."""
    subs = [
        {'type': 'python', 'solution': 'print(1)', 'expected_output': '1'},
        {'type': 'python', 'solution': 'raise SystemExit(3)'},
        {'type': 'cpp', 'solution': 'int main( {'},
    ]
    for sub in subs:
        run = post(gateway_url, '/run', sub)
        assert set(run) == set(SubmissionResult.model_fields), run
        SubmissionResult.model_validate(run)
        judged = post(gateway_url, '/judge', sub)
        assert set(judged) == set(JudgeResult.model_fields), judged
    batch = post(gateway_url, '/judge/batch', {'submissions': subs})
    assert [set(r) for r in batch['results']] == [set(JudgeResult.model_fields)] * len(subs)
    assert [r['verdict'] for r in batch['results']] == ['accepted', 'runtime_error', 'compile_error']


def test_openapi_declares_response_models(gateway_url: str) -> None:
    status, spec = request(gateway_url + '/openapi.json')
    assert status == 200
    schema = spec['paths']['/run/long-batch']['post']['responses']['200']['content']['application/json']['schema']
    assert schema['$ref'].endswith('/BatchSubmissionResult')


def test_single_run_overtakes_a_queued_long_batch(gateway_url: str) -> None:
    n = 30
    subs = [{'type': 'python', 'solution': 'import time\ntime.sleep(0.25)'}] * n
    done: dict[str, float] = {}

    def long_batch() -> None:
        post(gateway_url, '/run/long-batch', {'type': 'batch', 'submissions': subs})
        done['batch'] = time.monotonic()

    thread = threading.Thread(target=long_batch)
    thread.start()
    time.sleep(0.6)  # the batch is published and draining (2 slots x 4 per second)
    start = time.monotonic()
    r = post(gateway_url, '/run', {'type': 'python', 'solution': 'print("first")'})
    done['single'] = time.monotonic()
    thread.join()
    assert r['stdout'] == 'first\n'
    assert done['single'] - start < 1.5
    assert done['batch'] - done['single'] > 1.5, 'the single run waited for the batch'


def test_cpp_compile_cache_and_pch(gateway_url: str) -> None:
    source = (
        '#include <bits/stdc++.h>\nusing namespace std;\n'
        'int main(){long a,b;cin>>a>>b;vector<long> v={a,b};sort(v.begin(),v.end());cout<<a+b<<endl;}'
        f' // {time.time()}\n'
    )
    sub = {'type': 'cpp', 'solution': source, 'input': '3 4', 'expected_output': '7'}
    # The node's <bits/stdc++.h> PCH is built by the first such compile, which on a loaded machine can
    # outlast the request's bounded wait: build it with another program first (asked again meanwhile).
    warm = {'type': 'cpp', 'solution': source.replace('//', '// warm-up'), 'input': '1 1', 'expected_output': '2'}
    deadline = time.monotonic() + 180
    while post(gateway_url, '/run', warm, timeout_s=180)['verdict'] == 'queue_timeout' and time.monotonic() < deadline:
        time.sleep(1)
    first = post(gateway_url, '/run', sub, timeout_s=180)
    assert first['success'] and first['compile_cached'] is False, json.dumps(first)
    second = post(gateway_url, '/run', dict(sub, input='10 20', expected_output='30'))
    assert second['success'] and second['compile_cached'] is True, second


def test_a_finished_request_leaves_only_a_short_lived_live_key(stack: Stack, gateway_url: str) -> None:
    """Its reply list went with its last pop; its live key is not deleted (one round trip less) but
    expires within 30 s, instead of living for the whole route deadline plus a margin."""
    client = redis.Redis.from_url(stack.redis_url, decode_responses=True)
    keys = KeySpace()
    live = keys.request_patterns()[1]
    before = set(client.scan_iter(live))
    assert post(gateway_url, '/run', {'type': 'python', 'solution': 'print(1)'})['verdict'] == 'accepted'
    new = set(client.scan_iter(live)) - before
    assert len(new) == 1, new
    (key,) = new
    assert 0 < client.ttl(key) <= 30
    request_id = key.rsplit(':', 1)[1]
    assert not client.exists(keys.reply(request_id))
