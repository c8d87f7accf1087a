"""Piston v2's door over real HTTP on the real stack: ``/api/v2/execute`` with Piston's stages,
``/runtimes``, ``/packages``, its 400s; and open-r1's Codeforces requests exactly as open-r1's
``cf_scoring.score_single_test_case`` builds them and ``PistonClient.send_execute`` sends them
(``language`` a Codeforces name, ``version`` ``*``), scored as open-r1 scores them."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.support.helpers import request
from tests.support.processes.stack import TIME_LIMIT_S

pytestmark = pytest.mark.integration

SUM_CPP = '#include <iostream>\nint main(){long long a,b;std::cin>>a>>b;std::cout<<a+b<<"\\n";}'


def execute(url: str, body: dict[str, Any], expect: int = 200) -> dict[str, Any]:
    status, answer = request(url + '/api/v2/execute', body)
    assert status == expect, (status, answer)
    assert isinstance(answer, dict)
    return answer


def test_runtimes_and_packages_list_the_judges_languages(gateway_url: str) -> None:
    status, runtimes = request(gateway_url + '/api/v2/runtimes')
    assert status == 200
    by_name = {(r['language'], r.get('runtime')): r for r in runtimes}
    python = by_name[('python', None)]
    assert 'py' in python['aliases'] and python['version'].count('.') == 2 and python['version'] != '0.0.0'
    assert by_name[('c++', 'gcc')]['aliases'] == ['cpp', 'g++']
    assert 'cf_c++17' in by_name[('c++17', 'codeforces')]['aliases']
    status, packages = request(gateway_url + '/api/v2/packages')
    assert status == 200 and {'language': 'codeforces', 'language_version': '1.0.0', 'installed': True} in packages
    status, installed = request(gateway_url + '/api/v2/packages', {'language': 'codeforces', 'version': '1.0.0'})
    assert status == 200 and installed == {'language': 'codeforces', 'version': '1.0.0'}
    status, missing = request(gateway_url + '/api/v2/packages', {'language': 'cobol', 'version': '1.0.0'})
    assert status == 404 and 'does not exist' in missing['message']


def test_python_job_with_stdin_args_and_files(gateway_url: str) -> None:
    code = 'import sys\nprint(input(), sys.argv[1:], open("data/n.txt").read())\nsys.stderr.write("e")'
    body = {
        'language': 'py',
        'version': '3.x',
        'files': [
            {'name': 'main.py', 'content': code},
            {'name': 'data/n.txt', 'content': 'NDI=', 'encoding': 'base64'},
        ],
        'stdin': 'hi',
        'args': ['a', 'b c'],
    }
    answer = execute(gateway_url, body)
    assert answer['language'] == 'python' and 'compile' not in answer
    run = answer['run']
    assert run['stdout'] == "hi ['a', 'b c'] 42\n" and run['stderr'] == 'e' and run['output'] == run['stdout'] + 'e'
    assert (run['code'], run['signal'], run['status'], run['message']) == (0, None, None, None)
    assert run['memory'] > 0 and run['cpu_time'] >= 0 and run['wall_time'] >= 0


def test_stdin_gets_a_final_newline_as_in_piston(gateway_url: str) -> None:
    body = {'language': 'python', 'version': '*', 'files': [{'content': 'import sys; print(repr(sys.stdin.read()))'}]}
    assert execute(gateway_url, body | {'stdin': 'x'})['run']['stdout'] == "'x\\n'\n"


def test_failures_have_pistons_status_codes(gateway_url: str) -> None:
    def run(code: str, **extra: Any) -> dict[str, Any]:
        body = {'language': 'python', 'version': '*', 'files': [{'content': code}], **extra}
        return execute(gateway_url, body)['run']

    bad = run('raise SystemExit(3)')
    assert (bad['code'], bad['status'], bad['message'], bad['signal']) == (3, 'RE', 'Exited with error status 3', None)
    killed = run('import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)')
    assert (killed['code'], killed['status'], killed['signal']) == (None, 'SG', 'SIGSEGV'), killed
    t0 = time.monotonic()
    slow = run('while True: pass', run_timeout=1000)
    assert time.monotonic() - t0 < TIME_LIMIT_S
    assert (slow['code'], slow['status'], slow['signal']) == (None, 'TO', 'SIGKILL') and 900 <= slow['wall_time'] < 2000


def test_compiled_job_has_a_compile_stage_and_a_compile_error_repeats_it(gateway_url: str) -> None:
    answer = execute(gateway_url, {'language': 'cpp', 'version': '*', 'files': [{'content': SUM_CPP}], 'stdin': '2 40'})
    assert answer['language'] == 'c++' and answer['compile']['code'] == 0 and answer['run']['stdout'] == '42\n'
    answer = execute(gateway_url, {'language': 'c++', 'version': '*', 'files': [{'content': 'int main( {'}]})
    assert (
        answer['compile']['code'] == 1
        and answer['compile']['status'] == 'RE'
        and 'error' in answer['compile']['stderr']
    )
    assert answer['run'] == answer['compile']


@pytest.mark.parametrize(
    ('body', 'says'),
    [
        ({'language': 'cobol', 'version': '*', 'files': [{'content': 'x'}]}, 'cobol-* runtime is unknown'),
        ({'language': 'python', 'version': '2', 'files': [{'content': 'x'}]}, 'python-2 runtime is unknown'),
        ({'language': 'python', 'version': '>>3', 'files': [{'content': 'x'}]}, 'invalid version selector'),
        ({'language': 'python', 'files': [{'content': 'x'}]}, 'version'),
        ({'language': 'python', 'version': '*'}, 'files'),
        ({'language': 'python', 'version': '*', 'files': [{'name': 'a'}]}, 'content'),
        ({'language': 'python', 'version': '*', 'files': [{'content': 'eA==', 'encoding': 'base64'}]}, 'utf8'),
        ({'language': 'python', 'version': '*', 'files': [{'content': 'x'}, {'name': '../x', 'content': ''}]}, '..'),
        ({'language': 'python', 'version': '*', 'files': [{'content': 'x'}], 'run_timeout': -1}, 'non-negative'),
    ],
)
def test_bad_jobs_get_pistons_400(gateway_url: str, body: dict[str, Any], says: str) -> None:
    answer = execute(gateway_url, body, 400)
    assert set(answer) == {'message'} and says in answer['message'], answer


# --- open-r1's Codeforces requests ------------------------------------------------------------------


def cf_request(
    submission: str, language: str, test_input: str, test_output: str, checker: str | None = None, **problem: Any
) -> dict[str, Any]:
    """``score_single_test_case``'s data with ``send_execute``'s language and version, as open-r1 builds them."""
    problem = {'time_limit': 2, 'memory_limit': 256, 'input_mode': 'stdio', 'generated_checker': checker} | problem
    ext = 'python' if language == 'cf_python3' else 'cpp'
    config = {
        'TIME_LIMIT': problem['time_limit'],
        'MEMORY_LIMIT': problem['memory_limit'],
        'INPUT_MODE': problem['input_mode'],
    }
    return {
        'files': [
            {'name': f'main.{ext}', 'content': submission},
            *(
                [{'name': 'checker.py', 'content': problem['generated_checker']}]
                if problem['generated_checker']
                else []
            ),
            {'name': 'input.txt', 'content': test_input},
            {'name': 'correct_output.txt', 'content': test_output},
            {'name': 'grader_config', 'content': '\n'.join(f'{k}={v}' for k, v in config.items())},
        ],
        'run_timeout': (problem['time_limit'] + 10) * 1000,
        'language': language,
        'version': '*',
    }


def cf_passed(result: dict[str, Any]) -> bool:
    """open-r1's test verdict (``score_submission``)."""
    return bool(result and result['run']['code'] == 0 and result['run']['stdout'].strip() == '1')


def test_codeforces_cpp_right_wrong_and_yes_no_in_any_case(gateway_url: str) -> None:
    right = execute(gateway_url, cf_request(SUM_CPP, 'c++17', '1 2\r\n', '3\r\n'))
    assert right['language'] == 'c++17' and right['version'] == '1.0.0' and right['compile']['code'] == 0
    assert cf_passed(right) and right['run']['stderr'] == 'Output is correct (diff)\n'
    wrong = execute(gateway_url, cf_request(SUM_CPP, 'cf_c++17', '1 2', '4'))
    assert not cf_passed(wrong) and wrong['run']['code'] == 0 and wrong['run']['stdout'] == '0\n'
    yes = '#include <cstdio>\nint main(){puts("yes");puts("");puts("No");}'
    assert cf_passed(execute(gateway_url, cf_request(yes, 'c++17', '', 'YES\nNO\n')))


def test_codeforces_failures_use_the_packages_exit_codes(gateway_url: str) -> None:
    compile_error = execute(gateway_url, cf_request('int main( {', 'c++17', '', '1'))
    assert compile_error['compile']['code'] != 0, 'open-r1 scores this no_compile_reward'
    slow = execute(gateway_url, cf_request('while True: pass', 'cf_python3', '', '1', time_limit=1))
    assert (
        slow['run']['code'] == 124
        and slow['run']['stdout'] == '0\n'
        and 'Time limit exceeded (1s)' in slow['run']['stderr']
    )
    crash = execute(gateway_url, cf_request('raise SystemExit(5)', 'cf_python3', '', '1'))
    assert crash['run']['code'] == 5 and crash['run']['stderr'] == 'Runtime error with exit code 5\n'
    hog = execute(gateway_url, cf_request('x = bytearray(400 * 2**20)', 'cf_python3', '', '1', memory_limit=64))
    assert not cf_passed(hog) and hog['run']['code'] != 0


def test_codeforces_python_with_a_generated_checker(gateway_url: str) -> None:
    checker = (
        'import sys\n'
        'inp, want, got = (open(p).read().split() for p in sys.argv[1:4])\n'
        'print(1 if abs(float(want[0]) - float(got[0])) <= 1e-6 else 0)\n'
    )
    near = execute(gateway_url, cf_request('print(1 / 3)', 'cf_python3', '', '0.333333333', checker))
    assert cf_passed(near) and near['run']['stderr'] == 'Output is correct (checker)\n'
    far = execute(gateway_url, cf_request('print(0.5)', 'cf_python3', '', '0.333333333', checker))
    assert not cf_passed(far) and far['run']['stdout'] == '0\n'
    broken = execute(gateway_url, cf_request('print(1)', 'cf_python3', '', '1', 'print(1)\nraise SystemExit(2)'))
    assert not cf_passed(broken) and broken['run']['code'] == 2, 'the checker exit code is the run code'


def test_codeforces_file_input_mode(gateway_url: str) -> None:
    code = 'a, b = map(int, open("input.txt").read().split())\nopen("output.txt", "w").write(str(a * b))'
    assert cf_passed(execute(gateway_url, cf_request(code, 'cf_python3', '6 7', '42', input_mode='file')))
    cheat = 'import os\nprint(os.path.exists("correct_output.txt"))'
    answer = execute(gateway_url, cf_request(cheat, 'cf_python3', '', 'True'))
    assert not cf_passed(answer), 'the expected output is not in the program directory'


# --- open-r1's IOI requests (cms_ioi) ----------------------------------------------------------------

IOI_HEADER = '#include <vector>\nlong long total(std::vector<int> xs);\n'
IOI_GRADER = (
    '#include "sums.h"\n#include <cstdio>\n'
    'int main(){int n;std::scanf("%d",&n);std::vector<int> v(n);for(int&x:v)std::scanf("%d",&x);\n'
    '#ifdef EVAL\nstd::printf("%lld\\n", total(v));\n#endif\nreturn 0;}\n'
)
IOI_RIGHT = '#include "sums.h"\nlong long total(std::vector<int> xs){long long s=0;for(int x:xs)s+=x;return s;}\n'
IOI_CHECKER = (
    '#include <fstream>\n#include <iostream>\n'
    'int main(int argc,char**argv){std::ifstream want(argv[2]),got(argv[3]);long long a=-1,b=-2;want>>a;got>>b;'
    'if(a==b){std::cout<<"1\\n";std::cerr<<"translate:success\\n";}'
    'else if(b==a-1){std::cout<<"0.5\\n";std::cerr<<"translate:partial\\n";}'
    'else{std::cout<<"0\\n";std::cerr<<"translate:wrong\\n";}}\n'
)


def ioi_request(
    submission: str, test_input: str, test_output: str | None, checker: bool = False, **config: Any
) -> dict[str, Any]:
    """``run_submission``'s data with ``send_execute``'s language and version, as open-r1 builds them."""
    config = {'task_type': 'Batch', 'code': 'sums', 'time_limit': 1, 'memory_limit': 256 * 2**20} | config
    grader_files = [
        ('graders/grader.cpp', IOI_GRADER),
        ('graders/sums.h', IOI_HEADER),
        ('graders/grader_config.json', json.dumps(config)),
        *([('checker/checker.cpp', IOI_CHECKER)] if checker else []),
    ]
    problem = {'id': 'sums', 'time_limit': config['time_limit'], 'memory_limit': config['memory_limit']}
    return {
        'files': [
            {'name': f'graders/{problem["id"].lower()}.cpp', 'content': submission},
            {'name': 'input.txt', 'content': test_input},
            *([{'name': 'correct_output.txt', 'content': test_output}] if test_output else []),
            *({'name': name, 'content': content} for name, content in grader_files if content),
        ],
        'run_timeout': round((problem['time_limit'] + 3) * 1000),
        'run_memory_limit': problem['memory_limit'],
        'language': 'cms_ioi',
        'version': '*',
    }


def ioi_score(response: dict[str, Any]) -> tuple[str, str]:
    """open-r1's ``execute_ioi``: (score, feedback)."""
    if 'compile' in response and response['compile']['code'] != 0:
        return '0', 'Compilation error exit code ' + str(response['compile']['code']) + '\n' + response['compile'][
            'stderr'
        ]
    if response['run']['stdout']:
        return response['run']['stdout'], response['run']['stderr']
    if response['run']['signal'] == 'SIGKILL':
        return '0', 'Time limit exceeded'
    return '0', 'Unknown error'


def test_ioi_batch_with_the_grader_and_a_checker(gateway_url: str) -> None:
    right = execute(gateway_url, ioi_request(IOI_RIGHT, '3\n1 2 3\n', '6\n', checker=True))
    assert right['language'] == 'cms' and right['version'] == '1.0.0'
    assert ioi_score(right) == ('1\n', 'translate:success\n')
    off = IOI_RIGHT.replace('return s;', 'return s-1;')
    assert ioi_score(execute(gateway_url, ioi_request(off, '3\n1 2 3\n', '6\n', checker=True))) == (
        '0.5\n',
        'translate:partial\n',
    )
    diff = execute(gateway_url, ioi_request(IOI_RIGHT, '2\n5 5\n', '10\n'))
    assert ioi_score(diff) == ('1\n', 'Output is correct (diff)\n')
    raw = execute(gateway_url, ioi_request(IOI_RIGHT, '2\n5 5\n', None))
    assert ioi_score(raw) == ('10\n', '')


def test_ioi_failures_score_zero_with_the_packages_feedback(gateway_url: str) -> None:
    score, feedback = ioi_score(execute(gateway_url, ioi_request('int total( {', '1\n1\n', '1\n')))
    assert score == '0' and feedback.startswith('Compilation error exit code 1')
    slow = IOI_RIGHT.replace('long long s=0;', 'long long s=0;while(xs.size())s++;')
    assert ioi_score(execute(gateway_url, ioi_request(slow, '1\n1\n', '1\n'))) == ('0\n', 'Time limit exceeded (1s)\n')
    crash = IOI_RIGHT.replace('long long s=0;', 'long long s=0;if(xs.size()==1)__builtin_trap();')
    score, feedback = ioi_score(execute(gateway_url, ioi_request(crash, '1\n1\n', '1\n')))
    assert score == '0\n' and feedback.startswith('Runtime error with exit code')
