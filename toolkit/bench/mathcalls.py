"""``python -m toolkit.bench math``: rStar-style math tool calls against the bare interpreter spawn rate.

Four phases, in one run on one machine:

* ``math``: N tool-call programs, six kinds in turn (sympy ``solve``, ``factorint``, ``summation``,
  ``integrate``; numpy ``linalg.det``; stdlib ``itertools``), each with its own parameters and an
  answer this benchmark computes itself (pure Python) and checks;
* ``trivial``: N ``print(sum(range(10)))``;
  both sent as ``--senders`` concurrent loops of ``--per-request`` submissions (rStar2-Agent's shape);
* ``spawn``: the bare rate of ``python -c "import sympy, numpy"`` and of ``python3 -I -S -c pass`` in
  the node's submission runtime (``--runtime-python``, default: the one ``/status`` names), with as many
  concurrent spawns as the cluster has worker processes.  The sympy+numpy spawns run before and after
  the math phase (their mean is used, so drift during the run counts on both sides); the trivial phase
  runs ``--trivial-rounds`` times, each right after its own ``-I -S`` spawns, and the median of the
  rounds' ratios is reported (each round in ``trivial_rounds``).

Before the phases, every kind of tool call is sent to every slot until each answers like a warm slot
(its scientific parent started: `warm_math`).  Reports submissions/s, the CPU per bare spawn and
the two ratios the runtime is judged by: math rate / bare sympy+numpy rate, and trivial rate / bare
``-I -S`` rate; and the memory (PSS) of the largest slot and of its warm parents by kind, as the
nodes publish it in ``/status`` (at most every 30 s: after the phases, small batches are sent until
every slot has published since the warm-up, up to `MEMORY_WAIT_S`).  With
``--cpu``, also the stack's CPU per submission of each judge phase and the same ratios from CPU
(bare spawn CPU / judge CPU per submission): what the rates' ratios are on an otherwise idle
machine, steadier on a shared one.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import resource
import statistics
import time
from fractions import Fraction
from typing import Any

from toolkit.bench.cpu import cpu_delta, cpu_snapshot
from toolkit.bench.load import warm_up
from toolkit.client import JudgeClient
from toolkit.errors import ToolkitError
from toolkit.models import Submission

__all__ = ['math_case', 'math_scenario', 'run_phase', 'runtime_of', 'spawn_rate', 'warm_math']

PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23)


def math_case(i: int) -> tuple[str, str]:
    """The ``i``-th tool call (source) and its expected stdout (computed here, without sympy)."""
    kind = i % 6
    j = i // 6
    if kind == 0:
        a, b = -(j % 17) - 1, j % 23 + 1
        src = f'import sympy as sp\nx = sp.symbols("x")\nprint(sorted(sp.solve(x**2 - ({a + b})*x + ({a * b}), x)))'
        return src, f'[{a}, {b}]'
    if kind == 1:
        exps = [(p, (j + k) % 3) for k, p in enumerate(PRIMES[: 3 + j % 6])]
        n = math.prod(p**e for p, e in exps) * PRIMES[j % len(PRIMES)]
        factors: dict[int, int] = {}
        left = n
        for p in PRIMES:
            while left % p == 0:
                factors[p] = factors.get(p, 0) + 1
                left //= p
        return f'import sympy as sp\nprint(sorted(sp.factorint({n}).items()))', str(sorted(factors.items()))
    if kind == 2:
        n = 10 + j % 90
        src = (
            f'import sympy as sp\nk = sp.symbols("k", integer=True)\nprint(sp.summation(k**2 + {j % 5}*k, (k, 1, {n})))'
        )
        return src, str(n * (n + 1) * (2 * n + 1) // 6 + (j % 5) * n * (n + 1) // 2)
    if kind == 3:
        m, c = 1 + j % 4, 1 + j % 5
        src = f'import sympy as sp\nx = sp.symbols("x")\nprint(sp.integrate(x**{m}, (x, 0, {c})))'
        return src, str(Fraction(c ** (m + 1), m + 1))
    if kind == 4:
        a, b, c, d = j % 7 + 2, j % 5 - 2, j % 3 + 1, j % 11 + 3
        src = f'import numpy as np\nprint(round(np.linalg.det(np.array([[{a}, {b}], [{c}, {d}]], dtype=float))))'
        return src, str(a * d - b * c)
    n, k = 4 + j % 4, 2 + j % 3
    src = f'import itertools\nprint(sum(1 for _ in itertools.permutations(range({n}), {k})))'
    return src, str(math.perm(n, k))


async def spawn_rate(argv: list[str], n: int, concurrency: int) -> dict[str, float]:
    """Spawns per second of ``argv`` run ``n`` times, ``concurrency`` at once, and CPU ms per spawn."""
    left = n
    failures = 0

    async def loop() -> None:
        nonlocal left, failures
        while left > 0:
            left -= 1
            proc = await asyncio.create_subprocess_exec(
                *argv, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, env={}
            )
            failures += (await proc.wait()) != 0

    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(concurrency)))
    wall_s = time.perf_counter() - start
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
    if failures:
        raise ToolkitError(f'{" ".join(argv)} failed {failures} times of {n}')
    return {'per_s': n / wall_s, 'cpu_ms': cpu_s * 1000 / n}


async def _send(client: JudgeClient, subs: list[Submission], expected: list[str], args: argparse.Namespace) -> int:
    """Send ``subs`` as ``senders`` loops of ``per_request``; the number of wrong answers."""
    order = list(range(0, len(subs), args.per_request))
    wrong = 0

    async def sender() -> None:
        nonlocal wrong
        while order:
            i = order.pop()
            results = await client.run_batch(subs[i : i + args.per_request], timeout_s=3600)
            for res, want in zip(results, expected[i : i + args.per_request], strict=True):
                wrong += not (res.ok and (res.stdout or '').strip() == want)

    await asyncio.gather(*(sender() for _ in range(args.senders)))
    return wrong


async def run_phase(client: JudgeClient, cases: list[tuple[str, str]], args: argparse.Namespace) -> dict[str, Any]:
    subs = [Submission(src) for src, _ in cases]
    before = cpu_snapshot(args.cpu_match, args.cpu_root) if args.cpu else {}
    start = time.perf_counter()
    wrong = await _send(client, subs, [want for _, want in cases], args)
    wall_s = time.perf_counter() - start
    out: dict[str, Any] = {'per_s': len(cases) / wall_s, 'wrong': wrong}
    if args.cpu:
        used = cpu_delta(before, cpu_snapshot(args.cpu_match, args.cpu_root))
        out['cpu_ms'] = sum(used.values()) * 1000 / len(cases)
        out['sandbox_cpu_ms'] = sum(used.get(k, 0.0) for k in ('slot_server', 'zygote', 'program')) * 1000 / len(cases)
        out['cpu_ms_by_kind'] = {kind: round(cpu_s * 1000 / len(cases), 3) for kind, cpu_s in sorted(used.items())}
    return out


async def runtime_of(client: JudgeClient, args: argparse.Namespace) -> tuple[str, int]:
    """The node's submission runtime python (or ``--runtime-python``) and the cluster's worker processes."""
    await warm_up(client)  # a worker answers: its node info is published
    for _ in range(20):
        status = await client.status()
        nodes = status.get('nodes') or []
        if nodes:
            break
        await asyncio.sleep(0.5)
    python = args.runtime_python or next(
        (n['runtime']['python'] for n in nodes if isinstance(n.get('runtime'), dict) and n['runtime'].get('python')), ''
    )
    if not python or not os.access(python, os.X_OK):
        raise ToolkitError(f'no runtime python to spawn here ({python!r}): pass --runtime-python')
    return python, int(status.get('num_workers') or 2)


async def warm_math(client: JudgeClient, workers: int, timeout_s: float = 120.0) -> None:
    """Send every kind of tool call to every slot, unmeasured, until each answers like a warm slot.

    A slot starts its scientific warm parent on the first program that needs it, in the background,
    and meanwhile runs such programs in its lean parent (which then imports sympy itself): the rounds
    go on until no sympy program of a round took more than `WARM_COST_S` (or ``timeout_s`` passed).
    """
    cases = [math_case(i) for i in range(6 * workers)]
    deadline = time.monotonic() + timeout_s
    while True:
        results = await client.run_batch([Submission(src) for src, _ in cases], timeout_s=600)
        slow = [r.cost for r, (src, _) in zip(results, cases, strict=True) if 'sympy' in src and r.cost > WARM_COST_S]
        if not slow or time.monotonic() > deadline:
            return
        await asyncio.sleep(0.5)


WARM_COST_S = 0.25
"""A sympy tool call slower than this (wall) still ran without the scientific parent's warmth."""


MEMORY_WAIT_S = 45.0
"""How long `_slot_memory` waits for every slot to publish its memory anew (at most every 30 s)."""


async def _fresh_slots(client: JudgeClient, since: float, timeout_s: float = MEMORY_WAIT_S) -> list[dict[str, Any]]:
    """The slots of ``/status`` once each has published its memory after ``since`` (wall clock).

    A pool process publishes after an execution, at most every 30 s: small unmeasured batches are
    sent until every slot has (or ``timeout_s`` passed; then the last records seen)."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = await client.status()
        slots = [s for node in status.get('nodes') or [] for s in node.get('slots') or []]
        if (slots and all(float(s.get('updated_at') or 0) >= since for s in slots)) or time.monotonic() > deadline:
            return slots
        await client.run_batch([Submission('print(1)')] * max(2, len(slots)), timeout_s=60)
        await asyncio.sleep(2.0)


async def _slot_memory(client: JudgeClient, since: float) -> dict[str, Any]:
    """PSS per slot (server, warm parents, spare) as the nodes published it in ``/status`` after ``since``."""
    slots = await _fresh_slots(client, since)
    totals = [int((s.get('memory') or {}).get('total_pss_kb') or 0) for s in slots]
    kinds: dict[str, list[int]] = {}
    for slot in slots:
        for kind, kb in ((slot.get('memory') or {}).get('parents_pss_kb') or {}).items():
            kinds.setdefault(kind, []).append(int(kb))
    out: dict[str, Any] = {'slots': len(slots), 'slot_pss_mb': max(totals, default=0) / 1024}
    out |= {f'slot_{kind}_parents_pss_mb': max(kbs) / 1024 for kind, kbs in sorted(kinds.items())}
    return out


async def math_scenario(client: JudgeClient, args: argparse.Namespace) -> dict[str, Any]:
    """The four phases (see the module docstring); ``wrong`` counts wrong answers of both judge phases."""
    python, workers = await runtime_of(client, args)
    concurrency = args.spawn_concurrency or workers
    heavy = [python, '-c', 'import sympy, numpy']
    bare = [python, '-I', '-S', '-c', 'pass']
    spawns = [await spawn_rate(heavy, args.spawn_n, concurrency)]
    await warm_math(client, workers)
    warm_at = time.time()  # every slot's parents have started: memory published after this counts them
    math_phase = await run_phase(client, [math_case(i) for i in range(args.n)], args)
    spawns.append(await spawn_rate(heavy, args.spawn_n, concurrency))
    rounds = await _trivial_rounds(client, bare, concurrency, args)
    trivial = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    heavy_rate = (spawns[0]['per_s'] + spawns[1]['per_s']) / 2
    out: dict[str, Any] = {
        'n': args.n,
        'runtime_python': python,
        'spawn_concurrency': concurrency,
        'math_per_s': math_phase['per_s'],
        'trivial_per_s': trivial['per_s'],
        'bare_sympy_numpy_spawn_per_s': heavy_rate,
        'bare_python_IS_spawn_per_s': trivial['bare_per_s'],
        'ratio_math_vs_bare_sympy_numpy': math_phase['per_s'] / heavy_rate,
        'ratio_trivial_vs_bare_python_IS': trivial['ratio'],
        'bare_sympy_numpy_cpu_ms': (spawns[0]['cpu_ms'] + spawns[1]['cpu_ms']) / 2,
        'bare_python_IS_cpu_ms': trivial['bare_cpu_ms'],
        'wrong': math_phase['wrong'] + sum(int(r['wrong']) for r in rounds),
        'wrong_math': math_phase['wrong'],
        'trivial_rounds': rounds,
    }
    out |= await _slot_memory(client, warm_at)
    out |= {f'math_{k}': v for k, v in math_phase.items() if k.endswith('cpu_ms')}
    out |= {f'trivial_{k}': v for k, v in trivial.items() if k.endswith('cpu_ms') and not k.startswith('bare')}
    if args.cpu:  # CPU per submission against CPU per bare spawn: the rates' ratio on an idle machine
        out['cpu_ratio_math_vs_bare_sympy_numpy'] = out['bare_sympy_numpy_cpu_ms'] / math_phase['cpu_ms']
        out['cpu_ratio_trivial_vs_bare_python_IS'] = trivial['cpu_ratio']
    return out


async def _trivial_rounds(
    client: JudgeClient, bare: list[str], concurrency: int, args: argparse.Namespace
) -> list[dict[str, float]]:
    """``--trivial-rounds`` rounds of bare ``-I -S`` spawns then ``--n`` trivial programs, each round's
    trivial rate (and CPU) against its own spawns': a shared machine's load drifts less within a round."""
    rounds = []
    for _ in range(max(1, args.trivial_rounds)):
        spawn = await spawn_rate(bare, args.spawn_n, concurrency)
        phase = await run_phase(client, [('print(sum(range(10)))', '45')] * args.n, args)
        row = {
            'per_s': phase['per_s'],
            'bare_per_s': spawn['per_s'],
            'ratio': phase['per_s'] / spawn['per_s'],
            'bare_cpu_ms': spawn['cpu_ms'],
            'wrong': phase['wrong'],
        }
        if args.cpu:
            row |= {k: v for k, v in phase.items() if k.endswith('cpu_ms')}
            row['cpu_ratio'] = spawn['cpu_ms'] / phase['cpu_ms']
        rounds.append(row)
    return rounds
