"""Warm Python through a real slot server (no Celery): every program of a small corpus gives what a fresh
``python -I source.py`` gives (exit code, stdout, stderr), and the corpus's own expectations hold."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator

import pytest

from judge.sandbox.client import ExecRequest, SlotClient
from tests.support.processes.slots import PYTHON, RUN_LIMITS, open_slot


@pytest.fixture(scope='module')
def slot() -> Iterator[SlotClient]:
    with open_slot('sandbox', allow_unsafe=os.getuid() != 0) as client:
        yield client


def run_py(
    slot: SlotClient, source: str, mode: str, stdin: bytes = b'', **limits: float
) -> tuple[int | None, str, str]:
    lim = RUN_LIMITS._replace(**{'time_s': 3.0, **limits})  # type: ignore[arg-type]
    if mode == 'warm':
        req = ExecRequest(limits=lim, python_source=source, stdin=stdin)
    else:
        req = ExecRequest(limits=lim, argv=[PYTHON, '-I', 'source.py'], files={'source.py': source}, stdin=stdin)
    r = slot.run(req)
    norm = re.compile(r'/[^"\s]*/(?:x[0-9a-f]+/w|w[0-9a-f]+)/')  # the execution's work dir
    return (
        r.exit_code,
        norm.sub('<wd>/', r.stdout.decode(errors='replace')),
        norm.sub('<wd>/', r.stderr.decode(errors='replace')),
    )


CORPUS: dict[str, tuple[str, bytes]] = {
    'hello': ('print("hello")', b''),
    'stream_attributes': (
        'import sys\nfor s in (sys.stdin, sys.stdout, sys.stderr):\n'
        '    print(s.name, s.encoding, s.seekable(), s.line_buffering, s.isatty())\n'
        'print(sys.stdin.read(3), sys.stdin.tell())',
        b'abcdef',
    ),
    'main_guard': ('if __name__ == "__main__":\n    print("main")\nelse:\n    print(__name__)', b''),
    'argv_and_file': ('import sys, os\nprint(sys.argv, os.path.basename(__file__))', b''),
    'stdin_lines': ('import sys\nprint(sum(int(x) for x in sys.stdin.read().split()))', b'1 2 3\n4\n'),
    'input_eof': ('print(input())\nprint(input())', b'only one line\n'),
    'exception_traceback': ('def f():\n    return 1/0\n\nprint("before")\nf()', b''),
    'syntax_error': ('x = (1,\nprint(x)', b''),
    'sys_exit_int': ('import sys\nprint("a")\nsys.exit(3)', b''),
    'sys_exit_str': ('import sys\nsys.exit("bye")', b''),
    'sys_exit_none': ('raise SystemExit', b''),
    'recursion_limit': ('import sys\nprint(sys.getrecursionlimit())\ndef r(n): return r(n+1)\nr(0)', b''),
    'atexit_runs': ('import atexit\natexit.register(lambda: print("at exit"))\nprint("body")', b''),
    # nothing is imported on the way out (an import in each warm child cost 0.3 ms of CPU)
    'no_import_at_exit': (
        'import os, sys\n'
        'sys.addaudithook(lambda event, args: event == "import" and os.write(2, f"imported {args[0]}\\n".encode()))\n'
        'print("body")',
        b'',
    ),
    'thread_joined': (
        'import threading, time\nt = threading.Thread(target=lambda: (time.sleep(0.1), print("t")))\n'
        't.start()\nprint("main")',
        b'',
    ),
    'stderr_and_stdout': ('import sys\nprint("out")\nprint("err", file=sys.stderr)\nprint("out2")', b''),
    'unicode': ('print("héllo ☃")\nprint(input())', 'ünï\n'.encode()),
    'env_is_clean': ('import os\nprint(sorted(k for k in os.environ if "REDIS" in k or "MAX_" in k))', b''),
    'exit_in_finally': ('try:\n    raise ValueError("x")\nfinally:\n    print("cleanup")', b''),
    'keyerror_message': ('d = {}\nd["missing"]', b''),
    'first_free_fd': ('f = open("out.txt", "w")\nprint(f.fileno())', b''),
    'work_dir_listing': ('import os\nprint(sorted(os.listdir(".")))', b''),
    'os_exit_skips_flush': ('import os, sys\nprint("kept", flush=True)\nprint("lost")\nos._exit(5)', b''),
    'killed_by_a_signal': ('import os, signal\nprint("x", flush=True)\nos.kill(os.getpid(), signal.SIGKILL)', b''),
    'exit_code_255': ('import sys\nsys.exit(255)', b''),
}


@pytest.mark.parametrize('name', sorted(CORPUS))
def test_warm_and_fresh_python_agree(slot: SlotClient, name: str) -> None:
    source, stdin = CORPUS[name]
    warm = run_py(slot, source, 'warm', stdin)
    fresh = run_py(slot, source, 'fresh', stdin)
    assert warm == fresh


def test_corpus_expectations(slot: SlotClient) -> None:
    assert run_py(slot, CORPUS['exception_traceback'][0], 'warm', CORPUS['exception_traceback'][1])[0] == 1
    code, out, err = run_py(slot, CORPUS['exception_traceback'][0], 'warm', CORPUS['exception_traceback'][1])
    assert out == 'before\n'
    assert 'line 2, in f' in err and '<wd>/source.py' in err and 'ZeroDivisionError' in err
    assert run_py(slot, CORPUS['sys_exit_int'][0], 'warm', CORPUS['sys_exit_int'][1])[:2] == (3, 'a\n')
    assert run_py(slot, CORPUS['input_eof'][0], 'warm', CORPUS['input_eof'][1])[0] == 1
    assert run_py(slot, CORPUS['env_is_clean'][0], 'warm', CORPUS['env_is_clean'][1])[1] == '[]\n'
    assert run_py(slot, CORPUS['thread_joined'][0], 'warm', CORPUS['thread_joined'][1])[1] == 'main\nt\n'
    # no descriptor beyond 0-2 and nothing but the program in its work dir, as under `python3 file.py`
    assert run_py(slot, CORPUS['first_free_fd'][0], 'warm')[1] == '3\n'
    assert run_py(slot, CORPUS['work_dir_listing'][0], 'warm')[1] == "['source.py']\n"
    assert run_py(slot, CORPUS['os_exit_skips_flush'][0], 'warm')[:2] == (5, 'kept\n')
    assert run_py(slot, CORPUS['killed_by_a_signal'][0], 'warm')[:2] == (-signal.SIGKILL, 'x\n')
    assert run_py(slot, CORPUS['exit_code_255'][0], 'warm')[0] == 255
