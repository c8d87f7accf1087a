"""What a warm parent's preparation does to the CPU of each forked program (no sandbox, no judge).

``python -m scripts.fork_cost [--rounds N] [--python RUNTIME_PYTHON]`` runs, in the submission
runtime's interpreter, three kinds of parent and forks one child per program of the math bench's mix
(`toolkit.bench.mathcalls.math_case`, six kinds) and per trivial program:

* ``lean``: the lean warm parent (the default ``JUDGE_PYTHON_PRELOAD``);
* ``preloaded``: it also imported the scientific preload (sympy, numpy), no warm-up;
* ``scientific``: the scientific warm parent: preloaded, then `judge.sandbox.zygote.prepare.warm_up`,
  its memory then backed by huge pages (`judge.sandbox.zygote.prepare.collapse_huge_pages`);
* ``lean_huge_pages``, ``scientific_4k_pages``: the same with and without huge pages, for comparison.

Each child first reseeds the parent's random states, as a warm child does.  Per variant and kind,
the CPU of one program split into the parent's ``fork`` (copying page tables), the child's page
``faults`` (minor faults counted, priced by a calibration: writing to pages shared with the parent),
the program's ``own`` work (the rest of the child's CPU before it exits) and its ``exit`` (tearing
down its address space); and the parent's RSS and PSS.  Figures are indicative on a shared
machine: compare variants within one run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from judge.runtime import submission_python
from judge.settings import DEFAULT_PYTHON_PRELOAD, DEFAULT_SCIENTIFIC_PRELOAD, Settings
from toolkit.bench.mathcalls import math_case

_DRIVER = r"""
import gc, json, os, sys, time
cfg = json.load(sys.stdin)
for name in cfg['preload']:
    __import__(name)
sys.path.insert(0, cfg['root'])
from judge.sandbox.zygote import prepare  # the real warm parent's preparation (stdlib only)
sys.path.pop(0)
if cfg['warm_up']:
    prepare.warm_up()
states = prepare.find_random_states()
if cfg['huge']:
    prepare.collapse_huge_pages()
def run(src):
    exec(compile(src, 'source.py', 'exec'), {'__name__': '__main__'})
null = os.open(os.devnull, os.O_WRONLY)
gc.collect()
gc.freeze()
def pss_kb():
    with open('/proc/self/smaps_rollup') as f:
        keep = ('Rss', 'Pss', 'Pss_Anon', 'Pss_File')
        return {l.split(':')[0]: int(l.split()[1]) for l in f if l.split(':')[0] in keep}
def child_cost(src, scratch=None):
    r, w = os.pipe()
    t0 = time.process_time()
    pid = os.fork()
    if pid == 0:
        os.dup2(null, 1)
        try:
            for state in states:  # what each warm child does first
                state.seed()
            if scratch is not None:  # one write per page shared with the parent: the price of a fault
                for i in range(0, len(scratch), 4096):
                    scratch[i] = 1
            if src is not None:
                run(src)
            sys.stdout.flush()
            import resource
            os.write(w, json.dumps([time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt]).encode())
        finally:
            os._exit(0)
    fork_s = time.process_time() - t0
    os.close(w)
    _, status, ru = os.wait4(pid, 0)
    before_exit_s, minflt = json.loads(os.read(r, 200))
    os.close(r)
    assert status == 0, status
    total_s = ru.ru_utime + ru.ru_stime
    return {'fork': fork_s * 1000, 'child': total_s * 1000, 'exit': (total_s - before_exit_s) * 1000, 'minflt': minflt,
            'run': before_exit_s * 1000}
def median(rows, key):
    values = sorted(row[key] for row in rows)
    return values[len(values) // 2]
scratch = bytearray(os.urandom(16 << 20))
rows = [child_cost(None, scratch) for _ in range(cfg['rounds'])]
empty = [child_cost(None) for _ in range(cfg['rounds'])]
extra_faults = max(1, median(rows, 'minflt') - median(empty, 'minflt'))
fault_us = (median(rows, 'run') - median(empty, 'run')) * 1000 / extra_faults
out = {'memory_kb': pss_kb(), 'fault_us': fault_us, 'kinds': {}}
for kind, src in [('empty', None), *cfg['kinds'].items()]:
    rows = [child_cost(src) for _ in range(cfg['rounds'])]
    row = {key: median(rows, key) for key in rows[0]}
    row['faults'] = row['minflt'] * fault_us / 1000
    row['own'] = max(0.0, row['run'] - row['faults'])
    out['kinds'][kind] = row
print(json.dumps(out))
"""

ROOT = Path(__file__).resolve().parent.parent
KIND_NAMES = ('solve', 'factorint', 'summation', 'integrate', 'numpy_det', 'itertools')


def measure(python: str, preload: list[str], warm_up: bool, rounds: int, huge: bool = False) -> dict[str, Any]:
    """One parent variant's figures (see the module docstring)."""
    kinds = {name: math_case(6 * 7 + i)[0] for i, name in enumerate(KIND_NAMES)}
    kinds['trivial'] = 'print(sum(range(10)))'
    cfg = {'preload': preload, 'warm_up': warm_up, 'kinds': kinds, 'rounds': rounds, 'root': str(ROOT), 'huge': huge}
    out = subprocess.run(
        [python, '-I', '-c', _DRIVER], input=json.dumps(cfg), capture_output=True, text=True, check=True, env={}
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    """Print the variants' figures as a table (or JSON)."""
    parser = argparse.ArgumentParser(prog='python -m scripts.fork_cost', description=__doc__.split('\n')[0])
    parser.add_argument('--rounds', type=int, default=15, help='children per kind and variant (median kept)')
    parser.add_argument('--python', default='', help="the runtime's interpreter (default: the settings')")
    parser.add_argument('--json', action='store_true')
    args = parser.parse_args(argv)
    python = args.python or submission_python(Settings())
    lean = [m for m in DEFAULT_PYTHON_PRELOAD.split(',') if m]
    heavy = [*lean, *DEFAULT_SCIENTIFIC_PRELOAD.split(',')]
    variants = {
        'lean': measure(python, lean, False, args.rounds),
        'preloaded': measure(python, heavy, False, args.rounds),
        'lean_huge_pages': measure(python, lean, False, args.rounds, huge=True),
        'scientific_4k_pages': measure(python, heavy, True, args.rounds),
        'scientific': measure(python, heavy, True, args.rounds, huge=True),
    }
    if args.json:
        print(json.dumps(variants))  # noqa: T201
        return 0
    for name, data in variants.items():
        mem = data['memory_kb']
        print(  # noqa: T201
            f'== {name}: parent RSS {mem["Rss"] / 1024:.1f} MB, PSS {mem["Pss"] / 1024:.1f} MB '
            f'(anonymous {mem.get("Pss_Anon", 0) / 1024:.1f}, file {mem.get("Pss_File", 0) / 1024:.1f}); '
            f'a page fault costs {data["fault_us"]:.2f} us'
        )
        print(  # noqa: T201
            '  kind        total ms = fork + faults +  own + exit   (minflt)'
        )
        for kind, row in data['kinds'].items():
            total = row['fork'] + row['child']
            print(  # noqa: T201
                f'  {kind:<10} {total:8.2f}   {row["fork"]:6.2f} {row["faults"]:6.2f} {row["own"]:6.2f} '
                f'{row["exit"]:5.2f}   ({row["minflt"]})'
            )
    return 0


if __name__ == '__main__':
    sys.exit(main())
