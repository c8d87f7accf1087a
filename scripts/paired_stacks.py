"""Stack CPU per call of two running stacks, in small batches alternated A B / B A so both share the
host's noise: `python -m scripts.paired_stacks URL_A PID_A URL_B PID_B`.

Start one stack per tree (``python -m judge.stack`` with its own ``JUDGE_REDIS_PORT``,
``JUDGE_GATEWAY_PORT``, ``JUDGE_FLOWER_PORT``, ``JUDGE_WORK_ROOT`` and ``JUDGE_CACHE_DIR``); PID is the
launcher's.  Each round sends ``--batch`` calls of each kind to one stack, then to the other, and counts
the CPU of every process below each launcher (`toolkit.bench.cpu`), and the whole machine's busy CPU
(``/proc/stat``: kernel threads and interrupts included, and this client's own work, the same for both
sides).  Prints, per kind, the mean CPU per call of each side, B/A of the means and the median of the
rounds' ratios, and the mean per process kind.  A process that ends within a batch (a warm parent
renewed) takes its past CPU out of that batch's stack figure; the machine figure has no such gaps.
Run it once with the same tree on both sides first: that is the method's own spread.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from typing import Any

from toolkit.bench.cli import parse_args
from toolkit.bench.mathcalls import run_phase, warm_math
from toolkit.bench.wrapped import KINDS, cases_of
from toolkit.client import JudgeClient

PAIRED_POOL_IDLE_S = 3.0
"""Each side idles while the other is measured; gateways before 75c49f2 closed connections idle for 5 s
(uvicorn's default), so a pooled connection kept longer could be lost on the next batch."""


def busy_ms() -> float:
    """The machine's busy CPU so far (every CPU: user, nice, system, irq, softirq, steal), ms."""
    with open('/proc/stat', encoding='ascii') as f:
        ticks = [int(v) for v in f.readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) * 1000 / os.sysconf('SC_CLK_TCK')


async def compare(sides: dict[str, tuple[str, int]], kinds: list[str], rounds: int, batch: int) -> dict[str, Any]:
    """Per kind and side: CPU per call of each round, and by process kind."""
    clients = {side: JudgeClient(url, pool_idle_s=PAIRED_POOL_IDLE_S) for side, (url, _) in sides.items()}
    options = {
        side: parse_args(['math', '--url', url, '--cpu', '--cpu-root', str(pid)]) for side, (url, pid) in sides.items()
    }
    cpu: dict[tuple[str, str], list[float]] = {(s, k): [] for s in sides for k in kinds}
    machine: dict[tuple[str, str], list[float]] = {(s, k): [] for s in sides for k in kinds}
    by_kind: dict[tuple[str, str], dict[str, list[float]]] = {(s, k): {} for s in sides for k in kinds}
    try:
        for side, client in clients.items():
            await warm_math(client, 2)
            for kind in kinds:
                await run_phase(client, cases_of(kind, 20), options[side])
        for r in range(rounds):
            for kind in kinds:
                for side in sides if r % 2 == 0 else reversed(sides):
                    busy = busy_ms()
                    phase = await run_phase(clients[side], cases_of(kind, batch), options[side])
                    machine[(side, kind)].append((busy_ms() - busy) / batch)
                    if phase['wrong']:
                        raise SystemExit(f'{side}: {phase["wrong"]} wrong answers in {kind}')
                    cpu[(side, kind)].append(phase['cpu_ms'])
                    for name, ms in phase['cpu_ms_by_kind'].items():
                        by_kind[(side, kind)].setdefault(name, []).append(ms)
    finally:
        for client in clients.values():
            await client.close()
    return {'cpu': cpu, 'machine': machine, 'by_kind': by_kind}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('url_a')
    parser.add_argument('pid_a', type=int)
    parser.add_argument('url_b')
    parser.add_argument('pid_b', type=int)
    parser.add_argument('--rounds', type=int, default=40)
    parser.add_argument('--batch', type=int, default=100)
    parser.add_argument('--kinds', default='trivial_plain,math_plain', help=f'comma-separated, of {", ".join(KINDS)}')
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(',') if k]
    if unknown := set(kinds) - set(KINDS):
        parser.error(f'unknown kinds: {sorted(unknown)}')
    sides = {'A': (args.url_a, args.pid_a), 'B': (args.url_b, args.pid_b)}
    got = asyncio.run(compare(sides, kinds, args.rounds, args.batch))
    for kind in kinds:
        for what, label in (('cpu', 'stack CPU'), ('machine', 'machine CPU')):
            a, b = got[what][('A', kind)], got[what][('B', kind)]
            ratios = [y / x for x, y in zip(a, b, strict=True) if x > 0]
            sys.stdout.write(
                f'{kind}: {label} per call A {statistics.mean(a):.2f} ms, B {statistics.mean(b):.2f} ms; '
                f'B/A of the means {statistics.mean(b) / statistics.mean(a):.3f}, '
                f"median of the rounds' ratios {statistics.median(ratios):.3f}\n"
            )
        parts = got['by_kind'][('A', kind)], got['by_kind'][('B', kind)]
        names = sorted(set(parts[0]) | set(parts[1]))
        sys.stdout.write(
            '  by process (ms per call, A -> B): '
            + ', '.join(
                f'{n} {statistics.mean(parts[0].get(n, [0.0])):.2f} -> {statistics.mean(parts[1].get(n, [0.0])):.2f}'
                for n in names
            )
            + '\n'
        )


if __name__ == '__main__':
    main()
