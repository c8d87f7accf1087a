"""Programs that hide their imports get the warm scientific runtime, and templates are compiled once per slot.

On a real slot (no Celery): a program the source scan sends to the lean parent that then looks up
sympy or numpy runs again from the start in the scientific parent (`judge.sandbox.zygote.upgrade`),
keeping nothing of its first attempt; programs of a shape that needed it lately start there
(`judge.sandbox.server.warm.shapes`); the statements consecutive programs start with are compiled once by
the slot server (`judge.sandbox.server.warm.prefixes`).  What the programs print is checked against a
fresh interpreter where it matters.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from judge.sandbox.client import ExecRequest, ExecResult, SlotClient
from judge.sandbox.limits import Limits
from judge.settings import DEFAULT_PYTHON_PRELOAD, DEFAULT_SCIENTIFIC_PRELOAD
from tests.sandbox.fidelity.harness import normalise
from tests.support.processes.slots import PYTHON, RUN_LIMITS, open_slot
from toolkit.bench.templates import rstar_shape

LIMITS = RUN_LIMITS._replace(time_s=20, memory_mb=1024)


@pytest.fixture(scope='module')
def slot() -> Iterator[SlotClient]:
    extra = {
        'preload': DEFAULT_PYTHON_PRELOAD.split(','),
        'scientific': DEFAULT_SCIENTIFIC_PRELOAD.split(','),
        'pids': 64,
        'memory_mb': 1024,
    }
    with open_slot('hidden', allow_unsafe=os.getuid() != 0, extra=extra) as client:
        for _ in range(100):  # the scientific parent starts in the background on the first program needing it
            if run(client, 'import sympy\nprint(1)').parent == 'scientific':
                break
        yield client


def run(slot: SlotClient, source: str, stdin: bytes = b'', limits: Limits = LIMITS) -> ExecResult:
    return slot.run(ExecRequest(limits=limits, python_source=source, stdin=stdin))


def fresh(slot: SlotClient, source: str, stdin: bytes = b'') -> ExecResult:
    return slot.run(
        ExecRequest(limits=LIMITS, argv=[PYTHON, '-I', 'source.py'], files={'source.py': source}, stdin=stdin)
    )


def same(a: ExecResult, b: ExecResult) -> bool:
    """Equal exit code and output, the work dir and object addresses aside."""
    seen = [(r.exit_code, normalise(r.stdout.decode()), normalise(r.stderr.decode())) for r in (a, b)]
    return seen[0] == seen[1]


def test_a_template_that_hides_sympy_runs_in_the_scientific_parent(slot: SlotClient) -> None:
    program = rstar_shape('import sympy as sp\nx = sp.symbols("x")\nsp.solve(x**2 - 5*x + 6, x)')
    first = run(slot, program)
    assert first.exit_code == 0 and first.stdout == b'[2, 3]\n', first
    assert (first.parent, first.upgraded) == ('scientific', False), 'its base64 payload shows sympy: no second start'
    assert same(first, fresh(slot, program))


def test_a_template_whose_payload_needs_no_scientific_package_stays_lean(slot: SlotClient) -> None:
    for n in range(4):  # the template's shape has needed the scientific parent lately
        assert run(slot, rstar_shape(f'import numpy as np\nint(np.arange({n}).sum())')).parent == 'scientific'
    plain = [run(slot, rstar_shape(f'print(sum(range({n})))')) for n in range(8)]
    assert [(r.parent, r.stdout) for r in plain] == [('lean', f'{n * (n - 1) // 2}\n'.encode()) for n in range(8)]


@pytest.mark.parametrize(
    'source',
    [
        'import importlib\nm = importlib.import_module("sym" + "py")\nprint(m.factorint(360))',
        'def f():\n    import importlib\n    return int(importlib.import_module("num" + "py").arange(5).sum())\n'
        'print(f())',
        'mod = __import__("num" + "py")\nprint(int(mod.array([1, 2, 3]).sum()))',
    ],
    ids=['importlib', 'in_a_function', 'dunder_import'],
)
def test_every_shape_of_hidden_import_moves_the_program(slot: SlotClient, source: str) -> None:
    result = run(slot, source)
    assert (result.exit_code, result.parent, result.upgraded) == (0, 'scientific', True), result
    assert same(result, fresh(slot, source))


def test_nothing_of_the_first_attempt_is_kept(slot: SlotClient) -> None:
    source = (
        'import os\nprint("once", flush=True)\nline = input()\nopen("mark", "a").write("x")\n'
        'import importlib\nsp = importlib.import_module("sym" + "py")\n'
        'print(line, sp.isprime(int(line)), open("mark").read(), sorted(os.listdir(".")))'
    )
    result = run(slot, source, b'101\n')
    assert result.upgraded and result.stdout == b"once\n101 True x ['mark', 'source.py']\n", result
    assert same(result, fresh(slot, source, b'101\n'))


def test_a_program_that_has_worked_imports_cold_where_it_is(slot: SlotClient) -> None:
    source = (
        'n = 0\nfor i in range(4 * 10**6):\n    n += i & 3\n'
        'import importlib\nprint(importlib.import_module("sym" + "py").Integer(n))'
    )
    result = run(slot, source)
    assert (result.exit_code, result.upgraded, result.parent) == (0, False, 'lean'), result
    assert result.stdout == f'{sum(i & 3 for i in range(4 * 10**6))}\n'.encode()


def test_an_import_in_a_forked_child_does_not_move_the_program(slot: SlotClient) -> None:
    source = (
        'import os\npid = os.fork()\nif pid == 0:\n    import importlib\n    importlib.import_module("sym" + "py")\n'
        '    os._exit(7)\n_, status = os.waitpid(pid, 0)\nprint(os.waitstatus_to_exitcode(status))'
    )
    result = run(slot, source)
    assert (result.exit_code, result.stdout, result.upgraded) == (0, b'7\n', False), result


def test_the_time_limit_counts_both_attempts(slot: SlotClient) -> None:
    source = (
        'import time\ntime.sleep(1.2)\nimport importlib\nimportlib.import_module("sym" + "py")\n'
        'time.sleep(1.2)\nprint("late")'
    )
    result = run(slot, source, limits=LIMITS._replace(time_s=2.0))
    assert result.timed_out and result.stdout == b'', result
    assert 2.0 <= result.wall_s < 4.0


def test_a_forged_request_is_granted_once_and_never_where_it_was_not_offered(slot: SlotClient) -> None:
    """A program can find its done channel and write the request itself: it only gets what an import
    would have got (one rerun from the start), and a second forgery, in the scientific child, stops it."""
    forge = (
        'import gc, os, struct\n'
        'armed = [o for o in gc.get_objects() if type(o).__name__ == "_Armed"]\n'
        'path = armed[0].done_path if armed and armed[0].done_path else os.getcwd() + ".done"\n'
        'print("attempt", flush=True)\n'
        'fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)\n'
        'os.write(fd, struct.pack(">idq", 1 << 20, 0.0, 0))\n'
        'import time\ntime.sleep(5)\nprint("not reached")'
    )
    result = run(slot, forge, limits=LIMITS._replace(time_s=8.0))
    assert result.upgraded and result.parent == 'scientific', result
    assert result.exit_code != 0 and result.stdout == b'attempt\n' and not result.timed_out, result
    assert result.wall_s < 4.0
    assert run(slot, 'print("next")').stdout == b'next\n'


def test_a_shape_that_needed_the_scientific_parent_starts_there(slot: SlotClient) -> None:
    header = 'import base64, sys  # a template of its own\n' + '# padding\n' * 30
    hidden = 'import importlib\nsp = importlib.import_module("sym" + "py")\nprint(sp.factorint({}))'
    moved = [run(slot, header + hidden.format(n)) for n in range(12, 16)]
    assert all(r.parent == 'scientific' and r.exit_code == 0 for r in moved)
    assert moved[0].upgraded and not all(r.upgraded for r in moved), [r.upgraded for r in moved]
    # the same shape without the import: started in the scientific parent by the guess, still right
    plain = run(slot, header + 'print(sum(range(10)))')
    assert (plain.exit_code, plain.stdout, plain.upgraded) == (0, b'45\n', False)


PREFIX = (
    'from __future__ import annotations\nimport sys\n\n'
    + ''.join(f'def helper_{i}(x: Undefined{i}) -> int:\n    return x + {i}\n\n' for i in range(20))
    + 'if len(sys.argv) > 5:\n    mode = "many"\n'
)


@pytest.mark.parametrize(
    'rest',
    [
        'print(helper_3(4), helper_7.__annotations__)\n',
        'else:\n    mode = "few"\nprint(mode)\n',
        'print(helper_1(1))\n1 / 0\n',
        'print("x"\n',
        'from __future__ import division\nprint(1)\n',
    ],
    ids=['annotations_stay_strings', 'else_continues_the_prefix', 'traceback_lines', 'syntax_error', 'late_future'],
)
def test_programs_sharing_a_compiled_prefix_behave_as_fresh(slot: SlotClient, rest: str) -> None:
    run(slot, PREFIX + 'print("warming the prefix")\n')
    run(slot, PREFIX + 'print("compiled once")\n')
    source = PREFIX + rest
    assert same(run(slot, source), fresh(slot, source)), rest
