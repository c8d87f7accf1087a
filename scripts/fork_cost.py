"""What a warm parent's preparation does to the CPU of each forked program (no sandbox, no judge).

``python -m scripts.fork_cost [--rounds N] [--python RUNTIME_PYTHON]`` runs, in the submission
runtime's interpreter, three kinds of parent and forks one child per program of the math bench's mix
(`toolkit.benchmath.math_case`, six kinds) and per trivial program:

* ``lean``: the parent imported the default preload list only (``JUDGE_PYTHON_PRELOAD``'s default);
* ``preloaded``: it also imported sympy and numpy;
* ``prerun``: preloaded, and it ran one program of each kind once before forking;
* ``prerun_cleared``: the same, then cleared sympy's cache and the warning filters (the submodules
  the programs imported stay).

Per variant and kind: the child's CPU (``wait4``; fork's copy of the page tables is the parent's and
is reported apart), its minor page faults, an empty child's CPU (fork + exit alone) and the parent's
RSS and PSS.  Input of the phase-B design of issue 16 (warm parents per slot); figures are indicative
on a shared machine: compare variants within one run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from judge.settings import DEFAULT_PYTHON_PRELOAD, Settings
from toolkit.benchmath import math_case

_DRIVER = r"""
import gc, json, os, sys, time
cfg = json.load(sys.stdin)
for name in cfg['preload']:
    __import__(name)
def run(src):
    exec(compile(src, 'source.py', 'exec'), {'__name__': '__main__'})
null = os.open(os.devnull, os.O_WRONLY)
saved = os.dup(1)
if cfg['prerun']:
    os.dup2(null, 1)
    for src in cfg['kinds'].values():
        run(src)
    sys.stdout.flush()
    os.dup2(saved, 1)
    if cfg['prerun'] == 'clear':  # keep the submodules the programs imported, drop what they cached
        import warnings
        sys.modules['sympy'].core.cache.clear_cache()
        warnings.resetwarnings()
gc.collect()
gc.freeze()
def pss_kb():
    with open('/proc/self/smaps_rollup') as f:
        keep = ('Rss', 'Pss', 'Pss_Anon', 'Pss_File')
        return {l.split(':')[0]: int(l.split()[1]) for l in f if l.split(':')[0] in keep}
def child_cost(src):
    t0 = time.process_time()
    pid = os.fork()
    if pid == 0:
        os.dup2(null, 1)
        try:
            if src is not None:
                run(src)
            sys.stdout.flush()
        finally:
            os._exit(0)
    fork_s = time.process_time() - t0
    _, status, ru = os.wait4(pid, 0)
    assert status == 0, status
    return (ru.ru_utime + ru.ru_stime) * 1000, ru.ru_minflt, fork_s * 1000
out = {'memory_kb': pss_kb(), 'kinds': {}}
for kind, src in [('empty', None), *cfg['kinds'].items()]:
    cpu, flt, fork = [], [], []
    for _ in range(cfg['rounds']):
        c, f, p = child_cost(src)
        cpu.append(c); flt.append(f); fork.append(p)
    cpu.sort(); flt.sort(); fork.sort()
    mid = len(cpu) // 2
    out['kinds'][kind] = {'child_cpu_ms': cpu[mid], 'minflt': flt[mid], 'parent_fork_cpu_ms': fork[mid]}
print(json.dumps(out))
"""

KIND_NAMES = ('solve', 'factorint', 'summation', 'integrate', 'numpy_det', 'itertools')


def measure(python: str, preload: list[str], prerun: bool | str, rounds: int) -> dict[str, object]:
    """One parent variant's figures (see the module docstring)."""
    kinds = {name: math_case(6 * 7 + i)[0] for i, name in enumerate(KIND_NAMES)}
    kinds['trivial'] = 'print(sum(range(10)))'
    cfg = {'preload': preload, 'prerun': prerun, 'kinds': kinds, 'rounds': rounds}
    out = subprocess.run(
        [python, '-I', '-c', _DRIVER], input=json.dumps(cfg), capture_output=True, text=True, check=True, env={}
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    """Print the three variants' figures as a table (or JSON)."""
    parser = argparse.ArgumentParser(prog='python -m scripts.fork_cost', description=__doc__.split('\n')[0])
    parser.add_argument('--rounds', type=int, default=15, help='children per kind and variant (median kept)')
    parser.add_argument('--python', default='', help="the runtime's interpreter (default: the settings')")
    parser.add_argument('--json', action='store_true')
    args = parser.parse_args(argv)
    python = args.python or Settings().python_executor_path
    lean = [m for m in DEFAULT_PYTHON_PRELOAD.split(',') if m]
    heavy = [*lean, 'sympy', 'numpy']
    variants = {
        'lean': measure(python, lean, False, args.rounds),
        'preloaded': measure(python, heavy, False, args.rounds),
        'prerun': measure(python, heavy, True, args.rounds),
        'prerun_cleared': measure(python, heavy, 'clear', args.rounds),
    }
    if args.json:
        print(json.dumps(variants))  # noqa: T201
        return 0
    for name, data in variants.items():
        mem = data['memory_kb']
        assert isinstance(mem, dict)
        print(  # noqa: T201
            f'== {name}: parent RSS {mem["Rss"] / 1024:.1f} MB, PSS {mem["Pss"] / 1024:.1f} MB '
            f'(anonymous {mem.get("Pss_Anon", 0) / 1024:.1f}, file {mem.get("Pss_File", 0) / 1024:.1f})'
        )
        kinds = data['kinds']
        assert isinstance(kinds, dict)
        for kind, row in kinds.items():
            print(  # noqa: T201
                f'  {kind:<10} child CPU {row["child_cpu_ms"]:7.2f} ms  minflt {row["minflt"]:6d}  '
                f'parent fork CPU {row["parent_fork_cpu_ms"]:5.2f} ms'
            )
    return 0


if __name__ == '__main__':
    sys.exit(main())
