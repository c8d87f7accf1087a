"""The sandbox's own cost per execution, beside a fresh interpreter: `python -m scripts.sandbox_cost`.

Runs a trivial program N times per variant in rounds (so the variants share the machine's noise):
warm and fresh Python through a slot server of each available isolated tier (warm parents configured as
the worker configures them: `judge.worker.service.warm_config`), and a bare
``python3 -I -c`` with no sandbox.  CPU counts the slot server, its children and everything they
reaped.  Also the rate of bare ``python3 -I -S`` spawns two at a time (the floor the bench's
throughput is compared with).  Needs root for the isolated tiers.

``--fairness`` instead measures CPU fairness between two slots: an honest CPU-bound program's wall
time alone and beside a hog of 40 busy processes (each in its own session) in the other slot, with
the slots' cpu cgroups (`judge.sandbox.kernel.cpushare`) and without, alternated.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from judge.runtime import submission_python
from judge.sandbox.client import ExecRequest, SlotClient, SlotConfig
from judge.sandbox.slots import claim_slot
from judge.settings import Settings
from judge.worker.service import run_limits, warm_config
from toolkit.bench.cpu import Snapshot, cpu_snapshot

SOURCE = 'print(sum(range(10)))'
LIMITS = run_limits(Settings())
"""The worker's run limits under the settings of this environment."""


def _slot_cpu(client: SlotClient) -> Snapshot:
    """CPU seconds of the slot server and every live process below it (zygote, spare...)."""
    assert client._proc is not None
    return cpu_snapshot('', root_pid=client._proc.pid)


def _request(python: str, mode: str) -> ExecRequest:
    limits = LIMITS._replace(time_s=5)
    if mode == 'warm':
        return ExecRequest(limits=limits, python_source=SOURCE)
    return ExecRequest(limits=limits, argv=[python, '-I', 'source.py'], files={'source.py': SOURCE})


HONEST = """
import time
wall = time.perf_counter()
x = 0
for i in range(3_000_000):
    x += i
print(time.perf_counter() - wall)
"""
HOG = """
import os, time
end = time.time() + 3.0
for _ in range(40):
    if os.fork() == 0:
        os.setsid()
        while time.time() < end:
            pass
        os._exit(0)
time.sleep(3.0)
"""


def _client(python: str, tier: str = 'auto', **extra: object) -> tuple[SlotClient, int]:
    """A started slot of ``tier`` (``auto``: the best the host has), warm parents as the worker's."""
    index, fd = claim_slot()
    client = SlotClient(
        SlotConfig(
            slot=index,
            python=python,
            memory_mb=LIMITS.memory_mb,
            pids=LIMITS.pids,
            tier=tier,
            work_root='/tmp/judge-cost',
            extra={**warm_config(Settings()), **extra},
        )
    )
    try:
        client.ensure_started()
    except BaseException:
        os.close(fd)
        raise
    return client, fd


def _honest_s(client: SlotClient) -> float:
    result = client.run(ExecRequest(limits=LIMITS._replace(time_s=30), python_source=HONEST))
    return float(result.stdout)


def fairness(python: str, rounds: int) -> None:
    """Honest program alone and beside a hog, with and without per-slot cpu groups, alternated."""
    setups = {'cpu groups': {}, 'no cpu groups': {'cpu_group': False}}
    pairs = {
        name: (_client(python, 'auto', **extra), _client(python, 'auto', **extra)) for name, extra in setups.items()
    }
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in setups}
    order = list(setups)
    for i in range(rounds):
        for name in order if i % 2 == 0 else reversed(order):  # ABBA
            (hog_slot, _), (honest_slot, _) = pairs[name]
            alone = _honest_s(honest_slot)
            hog = threading.Thread(
                target=hog_slot.run, args=(ExecRequest(limits=LIMITS._replace(time_s=10), python_source=HOG),)
            )
            hog.start()
            time.sleep(0.5)
            beside = _honest_s(honest_slot)
            hog.join()
            figures[name].append((alone, beside))
    for name, runs in figures.items():
        ratios = [beside / alone for alone, beside in runs]
        detail = ', '.join(f'{a:.2f}s -> {b:.2f}s' for a, b in runs)
        sys.stdout.write(f'{name:>14}: honest alone -> beside a 40-process hog: {detail}; ')
        sys.stdout.write(f'slowdown x{statistics.median(ratios):.2f} (median of {len(ratios)})\n')
    for (client, fd), (other, other_fd) in pairs.values():
        client.close()
        other.close()
        os.close(fd)
        os.close(other_fd)


def spawn_rate(python: str, n: int) -> float:
    """Bare ``python3 -I -S`` spawns per second, two at a time, no sandbox."""
    argv = [python, '-I', '-S', '-c', SOURCE]

    def spawn(_: int) -> None:
        subprocess.run(argv, capture_output=True, check=True)

    start = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(spawn, range(n)))
    return n / (time.perf_counter() - start)


def phase_table(takes: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Microseconds of the slot server's CPU per execution, by phase, for each take with executions
    (the phase's total over the take's executions); ``total`` is their sum."""
    rounds = []
    for take in takes:
        executions = int(take.get('executions') or 0)
        if executions:
            spent = {str(name): int(ns) / executions / 1000 for name, ns in (take.get('ns') or {}).items()}
            rounds.append(spent | {'total': sum(spent.values())})
    names = sorted({name for spent in rounds for name in spent})
    return {name: [spent.get(name, 0.0) for spent in rounds] for name in names}


def format_phases(label: str, takes: list[dict[str, Any]]) -> str:
    """One line per phase: its microseconds per execution in each round."""
    lines = [f'{label}: slot server CPU per execution by phase (us; rounds)\n']
    table = phase_table(takes)
    for name in sorted(table, key=lambda n: (n == 'total', -statistics.fmean(table[n]))):
        lines.append(f'{name:>30}: {" / ".join(f"{v:.1f}" for v in table[name])}\n')
    return ''.join(lines)


def _slot_round(
    clients: dict[str, SlotClient],
    python: str,
    n: int,
    results: dict[str, list[tuple[float, float]]],
    phases: dict[str, list[dict[str, Any]]] | None,
) -> None:
    """One round of ``n`` warm then ``n`` fresh executions in each slot: wall and CPU seconds per
    execution into ``results``; the warm runs' phase costs into ``phases`` (when given)."""
    for tier, client in clients.items():
        for mode in ('warm', 'fresh'):
            timed = phases is not None and mode == 'warm'
            for _ in range(10):
                client.run(_request(python, mode))
            if timed:
                client.phase_costs()  # from zero
            cpu0, start = _slot_cpu(client), time.perf_counter()
            for _ in range(n):
                client.run(_request(python, mode))
            wall = (time.perf_counter() - start) / n
            cpu1 = _slot_cpu(client)
            if phases is not None and timed:
                phases.setdefault(tier, []).append(client.phase_costs())
            cpu_s = sum(cpu1[key][1] - cpu_s0 for key, (_, cpu_s0) in cpu0.items() if key in cpu1)
            results.setdefault(f'{tier} {mode}', []).append((wall, cpu_s / n))


def main() -> int:
    """Print wall and CPU milliseconds per execution for each variant and round."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--n', type=int, default=300, help='executions per variant and round')
    parser.add_argument('--rounds', type=int, default=2)
    parser.add_argument('--fairness', action='store_true', help='measure CPU fairness between two slots instead')
    parser.add_argument('--phases', action='store_true', help="also the slot server's own CPU by phase (warm runs)")
    args = parser.parse_args()
    python = submission_python(Settings())
    if args.fairness:
        fairness(python, max(2, args.rounds))
        return 0
    clients: dict[str, SlotClient] = {}
    locks = []
    for tier in ('namespaces', 'landlock'):
        try:
            client, fd = _client(python, tier, **({'phase_costs': True} if args.phases else {}))
        except Exception as exc:  # a tier this host cannot provide
            sys.stderr.write(f'skipping tier {tier}: {exc}\n')
            continue
        locks.append(fd)
        clients[tier] = client
    phases: dict[str, list[dict[str, Any]]] = {}
    results: dict[str, list[tuple[float, float]]] = {}
    rates: list[float] = []
    for _ in range(args.rounds):
        _slot_round(clients, python, args.n, results, phases if args.phases else None)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        for _ in range(args.n):
            subprocess.run([python, '-I', '-c', SOURCE], capture_output=True, check=True)
        wall = (time.perf_counter() - start) / args.n
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / args.n
        results.setdefault('no sandbox, fresh python3 -I', []).append((wall, cpu))
        rates.append(spawn_rate(python, args.n))
    for name, runs in results.items():
        walls = ' / '.join(f'{w * 1000:.2f}' for w, _ in runs)
        cpus = ' / '.join(f'{c * 1000:.2f}' for _, c in runs)
        sys.stdout.write(f'{name:>30}: wall {walls} ms; CPU {cpus} ms\n')
    sys.stdout.write(f'{"bare python3 -I -S, 2 at once":>30}: {" / ".join(f"{r:.0f}" for r in rates)} spawns/s\n')
    for tier, takes in phases.items():
        sys.stdout.write(format_phases(f'{tier} warm', takes))
    for client in clients.values():
        client.close()
    for fd in locks:
        os.close(fd)
    return 0


if __name__ == '__main__':
    sys.exit(main())
