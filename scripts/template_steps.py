"""Where a wrapped call's extra CPU goes in a forked child, step by step (no sandbox, no judge).

``python -m scripts.template_steps [--python CMD] [--n N] [--rounds R]`` runs, in the interpreter
``CMD`` (default: the submission runtime's; any command line, e.g. ``chroot /srv/trixie python3.13``
to try another Python), a parent that imports what the lean warm parent preloads for rStar2-Agent's
template (`toolkit.bench.templates.rstar_shape`) and forks one child per execution.  Each child runs
one program, already compiled by the parent, with its output on ``/dev/null``; the parent reads the
child's CPU and minor page faults from ``wait4``.

The programs are ``plain`` (``print(sum(range(1)))``) and the wrapped trivial call cut after each of
its steps: ``imports``, ``classes`` (the template's class definitions), ``decoded`` (the executor made,
the cell decoded), ``parsed`` (``ast.parse`` of the cell), ``wrapped`` (the whole call).  Two more
parents run the whole call:

* ``predefined``: the template's imports and class definitions already run in the parent (the
  child renames its functions' file, as it would have to with a work dir of its own, then runs the
  rest);
* ``immortal`` (Python 3.12+ only): every object of the parent made immortal before the fork, so
  that the child's reference counting stops writing to pages it shares with the parent.

The interpreter reads this file on its standard input, the programs come in an environment variable,
and the parent imports nothing beyond the lean preload's modules (``ast`` reads the programs).
Figures are indicative on a shared machine: compare rows of one run.
"""

from __future__ import annotations

import gc
import os
import sys
import types
from typing import Any

SOURCES_ENV = 'JUDGE_TEMPLATE_STEPS'
PREDEFINED_END = '\nnotebook = '
"""Where the template's definitions end (the first statement that calls something of its own)."""
STEP_ENDS = {'imports': '\nclass CellError', 'classes': PREDEFINED_END, 'decoded': '\nnotebook.run'}


def sources() -> dict[str, str]:
    """The programs, by step (host side: needs the repository)."""
    from toolkit.bench.templates import rstar_shape

    code = 'print(sum(range(1)))'
    wrapped = rstar_shape(code)
    steps = {'plain': code}
    for step, end in STEP_ENDS.items():
        steps[step] = wrapped[: wrapped.index(end) + 1]
    steps['parsed'] = steps['decoded'] + 'ast.parse(cell)\n'
    steps['wrapped'] = wrapped
    return steps


def _immortalize() -> int:
    """Give every object the parent can reach an immortal reference count (CPython 3.12+, 64-bit)."""
    import ctypes

    reach: dict[int, Any] = {id(o): o for o in gc.get_objects()}
    for o in list(reach.values()):
        for ref in gc.get_referents(o):
            reach.setdefault(id(ref), ref)
    for module in list(sys.modules.values()):
        reach.setdefault(id(module), module)
    count = 0
    for address in reach:
        refcount = ctypes.c_ssize_t.from_address(address)
        if 0 < refcount.value < 0x7FFFFFFF:
            refcount.value = 0xFFFFFFFF
            count += 1
    return count


def _rename(namespace: dict[str, Any], path: str) -> None:
    for value in list(namespace.values()):
        members = vars(value).values() if isinstance(value, type) and value.__module__ == '__main__' else [value]
        for member in list(members):
            function = getattr(member, '__func__', member)
            if isinstance(function, types.FunctionType):
                function.__code__ = function.__code__.replace(co_filename=path)


def _fork_run(run: Any, n: int, devnull: int) -> tuple[float, float]:
    """Median-ready totals: child CPU (ms) and minor faults per execution."""
    cpu_s = faults = 0.0
    for i in range(n):
        pid = os.fork()
        if pid == 0:
            os.dup2(devnull, 1)
            try:
                run(f'/tmp/x{i}/main.py')
                sys.stdout.flush()
            finally:
                os._exit(0)
        _, _, usage = os.wait4(pid, 0)
        cpu_s += usage.ru_utime + usage.ru_stime
        faults += usage.ru_minflt
    return cpu_s / n * 1e3, faults / n


def inner(steps: dict[str, str], n: int, rounds: int, variant: str) -> dict[str, Any]:
    """One parent (``variant``): fork and run each step ``n`` times per round; per step the medians."""
    import ast
    import base64  # noqa: F401  (the lean preload)
    import contextlib  # noqa: F401
    import io  # noqa: F401
    import linecache  # noqa: F401
    import traceback  # noqa: F401
    import typing  # noqa: F401

    path = '/tmp/parent/main.py'
    compile('_ = 0', '<warm-up>', 'exec', dont_inherit=True)
    ast.parse('_ = 0')
    codes = {step: compile(text, path, 'exec', dont_inherit=True) for step, text in steps.items()}
    wrapped = steps['wrapped']
    head = wrapped[: wrapped.index(PREDEFINED_END) + 1]
    rest = compile('\n' * head.count('\n') + wrapped[len(head) :], path, 'exec', dont_inherit=True)
    predefined: dict[str, Any] = {'__name__': '__main__', '__builtins__': __builtins__}
    if variant == 'predefined':
        exec(compile(head, path, 'exec', dont_inherit=True), predefined)
    gc.collect()
    immortal = _immortalize() if variant == 'immortal' else 0
    gc.freeze()
    devnull = os.open('/dev/null', os.O_WRONLY)

    def runner(step: str) -> Any:
        if variant == 'predefined':

            def run(child_path: str) -> None:
                _rename(predefined, child_path)
                exec(rest, predefined)

            return run
        return lambda _path: exec(codes[step], {'__name__': '__main__', '__builtins__': __builtins__})

    chosen = list(steps) if variant == 'steps' else ['wrapped']
    rows: dict[str, list[tuple[float, float]]] = {step: [] for step in chosen}
    for _ in range(rounds):
        for step in chosen:
            rows[step].append(_fork_run(runner(step), n, devnull))
    return {
        'python': sys.version.split()[0],
        'immortalized': immortal,
        'steps': {
            step: {'cpu_ms': _median([r[0] for r in got]), 'faults': _median([r[1] for r in got])}
            for step, got in rows.items()
        },
    }


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def main() -> None:
    import argparse
    import ast
    import shlex
    import subprocess
    import time

    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--python', help='the interpreter, as a command line (default: the submission runtime)')
    parser.add_argument('--n', type=int, default=500, help='executions per step and round')
    parser.add_argument('--rounds', type=int, default=4)
    args = parser.parse_args()
    if args.python:
        command = shlex.split(args.python)
    else:
        from judge.runtime import submission_python
        from judge.settings import Settings

        command = [submission_python(Settings())]
    env = {'PATH': os.environ.get('PATH', '/usr/bin:/bin'), SOURCES_ENV: repr(sources())}
    script = open(__file__).read()
    results = []
    variants = ['steps', 'predefined', 'immortal']
    for variant in variants:
        env['JUDGE_TEMPLATE_VARIANT'] = variant
        env['JUDGE_TEMPLATE_N'] = f'{args.n} {args.rounds}'
        started = time.monotonic()
        done = subprocess.run([*command, '-I', '-S', '-'], input=script, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            sys.stderr.write(f'{variant}: failed\n{done.stderr[-2000:]}\n')
            continue
        result = ast.literal_eval(done.stdout)
        results.append((variant, result, time.monotonic() - started))
    for variant, result, took_s in results:
        made = result['immortalized']
        sys.stdout.write(f'# {variant} (Python {result["python"]}, {took_s:.0f} s, {made} objects made immortal)\n')
        for step, got in result['steps'].items():
            sys.stdout.write(f'{step:10s} child CPU {got["cpu_ms"]:.3f} ms  minor faults {got["faults"]:.0f}\n')


if __name__ == '__main__':
    if SOURCES_ENV in os.environ:
        import ast

        n, rounds = (int(v) for v in os.environ['JUDGE_TEMPLATE_N'].split())
        variant = os.environ['JUDGE_TEMPLATE_VARIANT']
        if variant == 'immortal' and sys.version_info < (3, 12):
            sys.stdout.write(repr({'python': sys.version.split()[0], 'immortalized': 0, 'steps': {}}))
        else:
            sys.stdout.write(repr(inner(ast.literal_eval(os.environ[SOURCES_ENV]), n, rounds, variant)))
    else:
        main()
