"""The wrapper program (`toolkit.wrapper`), run with the local interpreter, and rStar's tool texts."""

from __future__ import annotations

import subprocess
import sys

from tests.support.toolkit_fakes import make_result
from toolkit import DeadlineExceeded, JudgeUnavailable
from toolkit.wrapper import format_error_text, format_tool_text, wrap_code


def exec_wrapped(
    code: str, history: tuple[str, ...] = (), stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, '-c', wrap_code(code, history)], input=stdin, capture_output=True, text=True, timeout=30
    )


def test_wrapper_prints_last_expression_repr() -> None:
    p = exec_wrapped("x = 20\n'a' * 2 if x else None")
    assert (p.returncode, p.stdout, p.stderr) == (0, "'aa'\n", '')
    p = exec_wrapped('x = 1\nNone')
    assert (p.returncode, p.stdout) == (0, '')


def test_wrapper_error_format_uses_user_line_numbers_and_keeps_stdout() -> None:
    p = exec_wrapped('print("before")\ny = 2\nprint(undefined_name)')
    assert p.returncode == 1
    assert p.stdout == 'before\n'
    assert p.stderr == "NameError at line 3: name 'undefined_name' is not defined\n  print(undefined_name)\n"


def test_wrapper_error_line_is_innermost_user_frame() -> None:
    p = exec_wrapped('def f(n):\n    return 10 // n\n\nf(0)')
    assert p.stderr.startswith('ZeroDivisionError at line 2: integer division or modulo by zero\n  return 10 // n')


def test_wrapper_syntax_error() -> None:
    p = exec_wrapped('x = 1\nfor for\n')
    assert p.returncode == 1
    assert p.stderr.startswith('SyntaxError at line 2: invalid syntax\n  for for')


def test_wrapper_history_replay_is_silent_and_keeps_state() -> None:
    p = exec_wrapped('print(total + 1)', history=('total = 41\nprint("hidden")', '1/0'))
    assert (p.returncode, p.stdout, p.stderr) == (0, '42\n', '')


def test_wrapper_stdin_exit_code_and_pickle() -> None:
    assert exec_wrapped('print(input()[::-1])', stdin='abc\n').stdout == 'cba\n'
    assert exec_wrapped('import sys\nprint("x")\nsys.exit(3)').returncode == 3
    p = exec_wrapped('import pickle\ndef g(): return 5\npickle.loads(pickle.dumps(g))()')
    assert (p.returncode, p.stdout) == (0, '5\n')


def test_wrapper_program_is_small_and_escapes_code() -> None:
    code = 'print("""\'quotes\' \\\\ and ünïcode""")'
    assert len(wrap_code('print(1)')) < 3000
    assert exec_wrapped(code).stdout == "'quotes' \\ and ünïcode\n"


# --- tool text ---------------------------------------------------------------------------------------


def test_tool_text_success_matches_rstar() -> None:
    text = format_tool_text(make_result(stdout='45\n', stderr='', cost=0.0123))
    assert text == 'Tool call success\nstdout: 45\n\nexecution time: 0.01s'


def test_tool_text_failure_matches_rstar() -> None:
    err = "NameError at line 1: name 'undefined_name' is not defined\n  print(undefined_name)\n"
    res = make_result(success=False, run_success=False, stdout='', stderr=err, cost=0.06)
    assert format_tool_text(res) == f'Tool call failure\nreason: \nstderr: {err}\nexecution time: 0.06s'
    res = make_result(success=False, run_success=False, reason='worker_timeout', stdout='Suicide from timeout.', cost=4)
    assert format_tool_text(res).splitlines() == [
        'Tool call failure',
        'reason: worker_timeout',
        'stdout: Suicide from timeout.',
        'execution time: 4.00s',
    ]


def test_error_text_for_missing_results() -> None:
    assert (
        format_error_text(DeadlineExceeded('late')) == 'Tool call failure\nreason: queue_timeout\nexecution time: 0.00s'
    )
    assert 'reason: internal_error' in format_error_text(JudgeUnavailable('down'))
