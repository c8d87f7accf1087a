"""open-r1's IOI Communication tasks on the Piston door, over real HTTP on the real stack: the problem's
manager talks to the solution over FIFOs (``std_io`` and ``fifo_io``, one and two processes, manager
arguments), scored as open-r1's ``execute_ioi`` scores the answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.doors.test_piston import execute, ioi_score

pytestmark = pytest.mark.integration

HEADER = 'int twice(int x);\n'
RIGHT = '#include "twice.h"\nint twice(int x){return 2*x;}\n'
STUB_STDIO = (
    '#include "twice.h"\n#include <cstdio>\n'
    'int main(){int x;while(std::scanf("%d",&x)==1){std::printf("%d\\n",twice(x));std::fflush(stdout);}}\n'
)
STUB_FIFO = (
    '#include "twice.h"\n#include <cstdio>\n#include <cstdlib>\n'
    'int main(int argc,char**argv){FILE*in=std::fopen(argv[1],"r");FILE*out=std::fopen(argv[2],"w");'
    'int me=argc>3?std::atoi(argv[3]):0;int x;'
    'while(std::fscanf(in,"%d",&x)==1){std::fprintf(out,"%d\\n",twice(x)+me);std::fflush(out);}}\n'
)
MANAGER = """#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <vector>
// argv: (u<i>_to_m, m_to_u<i>) for each process, then the score of a right exchange
int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  int processes = (argc - 2) / 2;
  std::vector<FILE*> to(processes), from(processes);
  for (int i = 0; i < processes; i++) {
    to[i] = std::fopen(argv[2 + 2 * i], "w");
    from[i] = std::fopen(argv[1 + 2 * i], "r");
  }
  int n, x, got;
  bool right = std::scanf("%d", &n) == 1;
  for (int k = 0; right && k < n && std::scanf("%d", &x) == 1; k++)
    for (int i = 0; right && i < processes; i++) {
      std::fprintf(to[i], "%d\\n", x);
      std::fflush(to[i]);
      right = std::fscanf(from[i], "%d", &got) == 1 && got == 2 * x + (processes > 1 ? i : 0);
    }
  for (int i = 0; i < processes; i++) std::fclose(to[i]);
  std::printf("%s\\n", right ? argv[argc - 1] : "0");
  std::fprintf(stderr, right ? "translate:success\\n" : "translate:wrong\\n");
}
"""
CHECKER = (
    '#include <fstream>\n#include <iostream>\n'
    'int main(int argc,char**argv){std::ifstream got(argv[3]);double s=-1;got>>s;'
    'std::cout<<(s>0?"1":"0")<<"\\n";std::cerr<<"checked\\n";}\n'
)


def communication_request(
    submission: str, test_input: str, *, fifo: bool = False, processes: int = 1, score: str = '1', **extra: Any
) -> dict[str, Any]:
    """``run_submission``'s data for a Communication problem, as open-r1 builds it."""
    config = {
        'task_type': 'Communication',
        'code': 'twice',
        'time_limit': 1,
        'memory_limit': 256 * 2**20,
        'task_type_parameters_Communication_num_processes': processes,
        'task_type_parameters_Communication_user_io': 'fifo_io' if fifo else 'std_io',
        'task_type_parameters_Communication_manager_args': score,
    } | extra.pop('config', {})
    files = [
        ('graders/stub.cpp', STUB_FIFO if fifo else STUB_STDIO),
        ('graders/twice.h', HEADER),
        ('graders/manager.cpp', MANAGER),
        ('graders/grader_config.json', json.dumps(config)),
        *extra.pop('more', []),
    ]
    test_output = extra.pop('test_output', None)
    return {
        'files': [
            {'name': 'graders/twice.cpp', 'content': submission},
            {'name': 'input.txt', 'content': test_input},
            *([{'name': 'correct_output.txt', 'content': test_output}] if test_output else []),
            *({'name': name, 'content': content} for name, content in files if content),
        ],
        'run_timeout': 4000,
        'run_memory_limit': config['memory_limit'],
        'language': 'cms_ioi',
        'version': '*',
    }


def test_std_io_manager_scores_right_and_wrong_solutions(gateway_url: str) -> None:
    right = execute(gateway_url, communication_request(RIGHT, '3\n1 5 -7\n'))
    assert right['compile']['code'] == 0
    assert ioi_score(right) == ('1\n', 'translate:success\n')
    wrong = RIGHT.replace('2*x', 'x+2')
    assert ioi_score(execute(gateway_url, communication_request(wrong, '3\n1 5 -7\n'))) == ('0\n', 'translate:wrong\n')
    # a correct output without a checker is not diffed: the manager's verdict stands
    same = execute(gateway_url, communication_request(RIGHT, '1\n4\n', test_output='whatever\n'))
    assert ioi_score(same) == ('1\n', 'translate:success\n')


def test_fifo_io_with_two_processes_and_manager_arguments(gateway_url: str) -> None:
    answer = execute(gateway_url, communication_request(RIGHT, '4\n1 2 3 4\n', fifo=True, processes=2, score='0.75'))
    assert ioi_score(answer) == ('0.75\n', 'translate:success\n')
    one = execute(gateway_url, communication_request(RIGHT, '2\n8 9\n', fifo=True, processes=1, score='0.5'))
    assert ioi_score(one) == ('0.5\n', 'translate:success\n')


def test_checker_reads_the_managers_output(gateway_url: str) -> None:
    more = [('checker/checker.cpp', CHECKER)]
    answer = execute(gateway_url, communication_request(RIGHT, '1\n3\n', more=more, test_output='1\n'))
    assert ioi_score(answer) == ('1\n', 'checked\n')


def test_failures_score_zero_with_the_packages_feedback(gateway_url: str) -> None:
    stuck = RIGHT.replace('return 2*x;', 'while(x||!x)x++;return x;')
    assert ioi_score(execute(gateway_url, communication_request(stuck, '1\n1\n'))) == (
        '0\n',
        'Time limit exceeded (1s)\n',
    )
    crash = RIGHT.replace('return 2*x;', 'if(x==5)__builtin_trap();return 2*x;')
    assert ioi_score(execute(gateway_url, communication_request(crash, '2\n1 5\n'))) == ('0\n', 'translate:wrong\n')
    score, feedback = ioi_score(execute(gateway_url, communication_request('int twice( {', '1\n1\n')))
    assert score == '0' and feedback.startswith('Compilation error exit code 1')


FORGER = """#include "twice.h"
#include <cstdio>
#include <dirent.h>
#include <cstdlib>
// Before answering wrong: write a perfect score on every output and read every input it can reach.
int twice(int x) {
  static bool done = false;
  if (!done) {
    done = true;
    int reached = 0;
    DIR* proc = opendir("/proc");
    for (dirent* e; proc && (e = readdir(proc));) {
      if (std::atoi(e->d_name) <= 0) continue;
      char path[64];
      for (int fd = 0; fd < 8; fd++) {
        std::snprintf(path, sizeof path, "/proc/%s/fd/%d", e->d_name, fd);
        if (FILE* f = std::fopen(path, "w")) { std::fputs("1\\n", f); std::fclose(f); reached++; }
        if (FILE* f = std::fopen(path, "r")) {
          char buf[64];
          if (std::fgets(buf, sizeof buf, f)) reached++;
          std::fclose(f);
        }
      }
    }
    std::fprintf(stderr, "reached %d\\n", reached);
  }
  return 2 * x + 1;
}
"""


def test_a_solution_cannot_reach_the_managers_input_or_output(gateway_url: str) -> None:
    # its own FIFOs and stderr it may reach; the manager's input and the answer it may not
    answer = execute(gateway_url, communication_request(FORGER, '2\n3 4\n', fifo=True))
    score, feedback = ioi_score(answer)
    assert score == '0\n' and feedback.endswith('translate:wrong\n'), answer  # its own stderr may come first


@pytest.mark.parametrize(
    ('config', 'more', 'says'),
    [
        ({'task_type_parameters_Communication_num_processes': 0}, [], 'num_processes'),
        ({'task_type_parameters_Communication_num_processes': 99}, [], 'num_processes'),
        ({'task_type_parameters_Communication_user_io': 'pipes'}, [], 'user_io'),
        ({'task_type_parameters_Communication_manager_args': 3}, [], 'manager_args'),
        ({'task_type': 'OutputOnly'}, [], 'Unsupported task type "OutputOnly"'),
    ],
)
def test_bad_communication_jobs_get_400(gateway_url: str, config: dict[str, Any], more: list[Any], says: str) -> None:
    answer = execute(gateway_url, communication_request(RIGHT, '1\n1\n', config=config, more=more), 400)
    assert says in answer['message']


def test_a_communication_job_without_its_manager_gets_400(gateway_url: str) -> None:
    body = communication_request(RIGHT, '1\n1\n')
    body['files'] = [f for f in body['files'] if f['name'] != 'graders/manager.cpp']
    assert 'manager.cpp not found' in execute(gateway_url, body, 400)['message']
