"""The sandbox's cost per warm execution in two source trees, side by side on one machine:
`python -m scripts.paired_slots TREE_A TREE_B`.  Needs root (the namespaces tier).

Each tree runs one slot server of its own (its ``scripts.sandbox_cost`` builds it: a tree without that
script cannot be compared), in a process of its own started from the tree, with the warm parents'
preloads the tree's settings give its workers (older trees' ``sandbox_cost`` did not pass them).
Rounds send ``--batch`` trivial warm executions (with ``--wrapped``, in rStar2-Agent's template shape,
`toolkit.bench.templates`) to one slot, then to the other, the order swapped every round (A B / B A), and
count the whole machine's busy CPU over each batch (``/proc/stat``), per execution: the kernel's work
for the slot (mounts, namespaces, deferred frees, RCU) is counted wherever it runs, which the slot's
own processes do not show.  The slot that is not measured waits, idle, so both share the host's drift.
Prints the mean of each side, B/A of the means, and the mean of the rounds' ratios with its standard
error.  Run it with the same tree on both sides first: that is the method's own spread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from typing import IO

from scripts.paired_stacks import busy_ms

SIDE = """
import sys
from scripts.sandbox_cost import _client, _request
from judge.runtime import submission_python
from judge.settings import Settings
settings = Settings()
python = submission_python(settings)
# parsed here, not through Settings' properties or warm_config: older trees have neither
client, _ = _client(python, **{
    key: [m.strip() for m in getattr(settings, field).split(',') if m.strip()]
    for key, field in (('preload', 'python_preload'), ('scientific', 'python_scientific_preload'))
})
request = _request(python, 'warm')
if WRAPPED:
    from dataclasses import replace
    from toolkit.bench.templates import rstar_shape
    request = replace(request, python_source=rstar_shape(request.python_source))
for _ in range(50):
    client.run(request)
print('ready', flush=True)
for line in sys.stdin:
    n = int(line)
    if n == 0:
        break
    for _ in range(n):
        result = client.run(request)
        if result.stdout.strip() != b'45':
            print('wrong', result, flush=True)
            raise SystemExit(1)
    print('ok', flush=True)
client.close()
"""
"""What each tree's process runs: one slot, ``N`` executions per line read, ``ok`` after each batch."""


def summary(a: list[float], b: list[float]) -> dict[str, float]:
    """Means of both sides, B/A of the means, and the mean of the paired ratios with its standard error."""
    ratios = [y / x for x, y in zip(a, b, strict=True)]
    error = statistics.stdev(ratios) / len(ratios) ** 0.5 if len(ratios) > 1 else float('nan')
    return {
        'a_ms': statistics.mean(a),
        'b_ms': statistics.mean(b),
        'of_means': statistics.mean(b) / statistics.mean(a),
        'ratio': statistics.mean(ratios),
        'ratio_se': error,
    }


def _start(tree: str, wrapped: bool = False) -> subprocess.Popen[str]:
    side = subprocess.Popen(
        [sys.executable, '-c', f'WRAPPED = {wrapped}\n{SIDE}'],
        cwd=tree,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    if _line(side) != 'ready':
        raise SystemExit(f'{tree}: its slot did not start')
    return side


def _line(side: subprocess.Popen[str]) -> str:
    out: IO[str] | None = side.stdout
    assert out is not None
    return out.readline().strip()


def _batch(side: subprocess.Popen[str], n: int) -> float:
    """Machine CPU per execution of one batch, ms."""
    assert side.stdin is not None
    start = busy_ms()
    side.stdin.write(f'{n}\n')
    side.stdin.flush()
    answer = _line(side)
    if answer != 'ok':
        raise SystemExit(f'a batch failed: {answer}')
    return (busy_ms() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('tree_a')
    parser.add_argument('tree_b')
    parser.add_argument('--rounds', type=int, default=30)
    parser.add_argument('--batch', type=int, default=300)
    parser.add_argument('--wrapped', action='store_true', help="the program in rStar2-Agent's template shape")
    args = parser.parse_args()
    sides = {
        name: _start(os.path.abspath(tree), args.wrapped) for name, tree in (('A', args.tree_a), ('B', args.tree_b))
    }
    got: dict[str, list[float]] = {'A': [], 'B': []}
    try:
        for r in range(args.rounds):
            for name in 'AB' if r % 2 == 0 else 'BA':
                got[name].append(_batch(sides[name], args.batch))
    finally:
        for side in sides.values():
            assert side.stdin is not None
            side.stdin.write('0\n')
            side.stdin.flush()
            side.wait()
    s = summary(got['A'], got['B'])
    sys.stdout.write(
        f'warm {"wrapped " if args.wrapped else ""}trivial execution, machine CPU: '
        f'A {s["a_ms"]:.3f} ms, B {s["b_ms"]:.3f} ms; '
        f"B/A of the means {s['of_means']:.3f}, mean of the rounds' ratios {s['ratio']:.3f} "
        f'+- {s["ratio_se"]:.3f} (1 SE, {args.rounds} rounds of {args.batch})\n'
    )


if __name__ == '__main__':
    main()
