"""SandboxFusion's door over real HTTP on the real stack (redis-server, prefork worker, uvicorn):
``/run_code``, ``/run_jupyter`` and ``/v1/ping`` answer as SandboxFusion's server does, in its
request and response shapes (its clients themselves: ``tests/frameworks/test_verl_sandboxfusion.py``
and ``tests/frameworks/test_door_sdks.py``)."""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from judge.stack import free_port
from tests.support.helpers import request
from tests.support.metrics import scrape, value
from tests.support.processes.services import start_gateway
from tests.support.processes.stack import TIME_LIMIT_S, Stack

pytestmark = pytest.mark.integration

CPP_OK = '#include <cstdio>\nint main(){int a,b;scanf("%d %d",&a,&b);printf("%d\\n",a+b);}'


def run_code(url: str, body: dict[str, Any], expect: int = 200) -> dict[str, Any]:
    status, answer = request(url + '/run_code', body)
    assert status == expect, (status, answer)
    assert isinstance(answer, dict)
    return answer


def test_python_success_has_sandboxfusions_fields(gateway_url: str) -> None:
    answer = run_code(gateway_url, {'code': 'print(input()[::-1])', 'stdin': 'abc', 'language': 'python'})
    assert answer['status'] == 'Success' and answer['message'] == '', answer
    assert answer['compile_result'] is None and answer['files'] == {} and 'executor_pod_name' in answer
    run = answer['run_result']
    assert run['status'] == 'Finished' and run['return_code'] == 0 and run['stdout'] == 'cba\n' and run['stderr'] == ''
    assert 0 < run['execution_time'] < TIME_LIMIT_S


def test_language_defaults_to_python_and_output_is_whole(gateway_url: str) -> None:
    answer = run_code(gateway_url, {'code': 'print("x" * 5000)'})
    assert answer['status'] == 'Success' and answer['run_result']['stdout'] == 'x' * 5000 + '\n'


def test_runtime_error_is_failed_with_its_exit_code(gateway_url: str) -> None:
    answer = run_code(gateway_url, {'code': 'import sys\nprint(1)\nsys.exit(3)', 'language': 'python'})
    assert answer['status'] == 'Failed' and answer['message'] == ''
    assert answer['run_result']['status'] == 'Finished' and answer['run_result']['return_code'] == 3
    answer = run_code(gateway_url, {'code': '1/0', 'language': 'python'})
    assert answer['run_result']['return_code'] == 1 and 'ZeroDivisionError' in answer['run_result']['stderr']


def test_time_limit_is_failed_time_limit_exceeded_within_run_timeout(gateway_url: str) -> None:
    t0 = time.monotonic()
    answer = run_code(gateway_url, {'code': 'print("started", flush=True)\nwhile True: pass', 'run_timeout': 1})
    assert time.monotonic() - t0 < TIME_LIMIT_S, 'run_timeout lowered the limit'
    run = answer['run_result']
    assert answer['status'] == 'Failed' and run['status'] == 'TimeLimitExceeded' and run['return_code'] is None
    assert run['stdout'] == 'started\n', 'no upstream marker in a door answer'
    assert 1 <= run['execution_time'] < 2


def test_run_timeout_above_the_judge_limit_is_capped(gateway_url: str) -> None:
    answer = run_code(gateway_url, {'code': 'import time\ntime.sleep(30)', 'run_timeout': 60})
    assert answer['run_result']['status'] == 'TimeLimitExceeded'
    assert answer['run_result']['execution_time'] < TIME_LIMIT_S + 1


def test_memory_limit_lowers_the_judge_limit(gateway_url: str) -> None:
    hog = 'x = bytearray(150 * 1024 * 1024)\nprint(len(x))'
    assert run_code(gateway_url, {'code': hog})['status'] == 'Success'
    answer = run_code(gateway_url, {'code': hog, 'memory_limit_MB': 64})
    assert answer['status'] == 'Failed' and answer['run_result']['return_code'] != 0, answer


def test_cpp_compiles_then_runs_and_a_compile_error_is_failed(gateway_url: str) -> None:
    answer = run_code(gateway_url, {'code': CPP_OK, 'stdin': '2 3', 'language': 'cpp'})
    assert answer['status'] == 'Success' and answer['run_result']['stdout'] == '5\n'
    compiled = answer['compile_result']
    assert compiled['status'] == 'Finished' and compiled['return_code'] == 0 and compiled['execution_time'] >= 0
    answer = run_code(gateway_url, {'code': 'int main( {', 'language': 'cpp'})
    assert answer['status'] == 'Failed' and answer['run_result'] is None
    assert answer['compile_result']['return_code'] == 1 and 'error' in answer['compile_result']['stderr']


def test_nodejs_and_bash_map_onto_the_judges_languages(gateway_url: str) -> None:
    answer = run_code(gateway_url, {'code': 'console.log(6*7)', 'language': 'nodejs'})
    assert answer['status'] == 'Success' and answer['run_result']['stdout'] == '42\n'
    answer = run_code(gateway_url, {'code': 'echo $((6*7))', 'language': 'bash'})
    assert answer['status'] == 'Success' and answer['run_result']['stdout'] == '42\n'


def test_files_are_written_and_fetch_files_come_back(gateway_url: str) -> None:
    code = (
        'import os\n'
        'data = open("data/in.txt").read()\n'
        'os.makedirs("out", exist_ok=True)\n'
        'open("out/result.txt", "w").write(data.upper())\n'
        'os.symlink("/etc/passwd", "leak")\n'
        'os.symlink("/etc", "etc")\n'
        'print(open("raw.bin", "rb").read().hex())\n'
    )
    files = {'data/in.txt': base64.b64encode(b'hello').decode(), 'raw.bin': base64.b64encode(b'\x00\xff').decode()}
    answer = run_code(
        gateway_url,
        {'code': code, 'files': files, 'fetch_files': ['out/result.txt', 'missing.txt', 'leak', 'etc/passwd']},
    )
    assert answer['status'] == 'Success', answer
    assert answer['run_result']['stdout'] == '00ff\n'
    assert answer['files'] == {'out/result.txt': base64.b64encode(b'HELLO').decode()}, 'a link is never followed'


@pytest.mark.parametrize(
    ('body', 'field'),
    [
        ({'code': 'print(1)', 'language': 'php'}, 'language'),
        ({'code': 'print(1)', 'language': 'cobol'}, 'language'),
        ({'language': 'python'}, 'code'),
        ({'code': 'print(1)', 'files': {'../escape.txt': 'aGk='}}, 'files'),
        ({'code': 'print(1)', 'files': {'/etc/x': 'aGk='}}, 'files'),
        ({'code': 'print(1)', 'files': {'a.txt': 'not base64!'}}, 'files'),
        ({'code': 'print(1)', 'fetch_files': ['a/../../b']}, 'fetch_files'),
        ({'code': 'print(1)', 'run_timeout': 'soon'}, 'run_timeout'),
    ],
)
def test_bad_requests_get_sandboxfusions_422(gateway_url: str, body: dict[str, Any], field: str) -> None:
    status, answer = request(gateway_url + '/run_code', body)
    assert status == 422, answer
    assert [d['loc'][:2] for d in answer['detail']] == [['body', field]], answer
    if field == 'language':
        assert answer['detail'][0]['type'] == 'literal_error' and "'python'" in answer['detail'][0]['msg']


def test_ping_and_the_door_metrics(gateway_url: str) -> None:
    assert request(gateway_url + '/v1/ping') == (200, 'pong')
    before = scrape(gateway_url)
    run_code(gateway_url, {'code': 'print(1)'}, 200)
    run_code(gateway_url, {'code': 'raise SystemExit(2)'}, 200)
    after = scrape(gateway_url)
    for verdict in ('accepted', 'runtime_error'):
        labels = {'door': 'sandboxfusion', 'verdict': verdict}
        assert (
            value(after, 'judge_door_submissions_total', **labels)
            - value(before, 'judge_door_submissions_total', **labels)
            == 1
        )
    route = {'language': 'python', 'route': '/run_code', 'verdict': 'accepted'}
    assert value(after, 'judge_submissions_total', **route) > value(before, 'judge_submissions_total', **route)


def test_run_jupyter_keeps_state_between_cells_and_reports_each(gateway_url: str) -> None:
    cells = [
        'a = 123',
        'a',
        'print(a)',
        'import sys; sys.stderr.write("stderr message")',
        'raise RuntimeError("boom")',
        'a + 1',
    ]
    status, answer = request(gateway_url + '/run_jupyter', {'cells': cells})
    assert status == 200 and answer['status'] == 'Success', answer
    assert answer['driver']['status'] == 'Finished' and answer['driver']['return_code'] == 0
    got = answer['cells']
    assert len(got) == 6 and all(set(c) >= {'stdout', 'stderr', 'display', 'error'} for c in got)
    assert got[0] == {'stdout': '', 'stderr': '', 'display': [], 'error': []}
    assert got[1]['display'] == [{'text/plain': '123'}]
    assert got[2]['stdout'] == '123\n' and got[3]['stderr'] == 'stderr message'
    assert got[3]['display'] == [{'text/plain': '14'}]  # write() returns the count, shown as a kernel shows it
    assert got[4]['error'][0]['ename'] == 'RuntimeError' and got[4]['error'][0]['evalue'] == 'boom'
    assert got[5]['display'] == [{'text/plain': '124'}], 'cells after an error still run'


def test_run_jupyter_timeouts(gateway_url: str) -> None:
    status, answer = request(
        gateway_url + '/run_jupyter', {'cells': ['import time', 'time.sleep(5)', '1'], 'cell_timeout': 0.5}
    )
    assert status == 200 and answer['status'] == 'Success', answer
    assert answer['cells'][1]['error'][0]['ename'] == 'TimeoutError' and answer['cells'][2]['display']
    status, answer = request(gateway_url + '/run_jupyter', {'cells': ['while True: pass'], 'total_timeout': 1})
    assert status == 200 and answer['status'] == 'Failed' and answer['cells'] == []
    assert answer['driver']['status'] == 'TimeLimitExceeded'


# --- the infrastructure's failures: SandboxError or 504, never Failed ----------------------------


@pytest.fixture(scope='module')
def idle_gateway(stack: Stack) -> Iterator[str]:
    """A gateway whose queue nobody consumes (its own Redis database), a 6 s deadline and room for one."""
    env = {
        **stack.env,
        'REDIS_URI': stack.redis_url.rsplit('/', 1)[0] + '/5',
        'JUDGE_MAX_IN_FLIGHT': '1',
        'MAX_EXECUTION_TIME': '1',
        'MAX_QUEUE_WORK_LIFE_TIME': '0',
    }
    svc, url = start_gateway(env, stack.log_dir)
    try:
        yield url
    finally:
        svc.stop()


def test_deadline_and_back_pressure_answer_504_which_verl_retries(idle_gateway: str) -> None:
    answers: list[tuple[int, Any]] = []
    waiting = threading.Thread(target=lambda: answers.append(request(idle_gateway + '/run_code', {'code': 'print(1)'})))
    waiting.start()
    time.sleep(1.0)
    status, body = request(idle_gateway + '/run_code', {'code': 'print(2)'})
    assert status == 504 and 'busy' in body['detail'], body
    waiting.join(30)
    ((status, body),) = answers
    assert status == 504 and 'deadline' in body['detail'], body


def test_no_broker_is_a_sandbox_error(stack: Stack) -> None:
    # No Redis at that port; the gateway rides out an outage of up to JUDGE_BROKER_OUTAGE_S before it answers.
    no_redis = f'redis://127.0.0.1:{free_port()}/0'
    env = {**stack.env, 'REDIS_URI': no_redis, 'JUDGE_MAX_IN_FLIGHT': '0', 'JUDGE_BROKER_OUTAGE_S': '2'}
    svc, url = start_gateway(env, stack.log_dir)
    try:
        answer = run_code(url, {'code': 'print(1)'})
        status, jupyter = request(url + '/run_jupyter', {'cells': ['1']})
    finally:
        svc.stop()
    assert answer['status'] == 'SandboxError' and answer['message'], answer
    assert answer['run_result'] is None and answer['compile_result'] is None
    assert status == 200 and jupyter['status'] == 'SandboxError' and jupyter['cells'] == []
