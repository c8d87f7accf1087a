"""``python -m toolkit.bench wrapped``: tool calls as clients send them (wrapped) beside the same programs plain.

Four kinds of program, each answer checked:

* ``math_plain``: the math tool calls of `toolkit.bench.mathcalls` (sympy, numpy, itertools);
* ``math_wrapped``: the same code inside rStar2-Agent's template shape (`toolkit.bench.templates`):
  standard-module imports, the code base64-encoded, run through ``exec``;
* ``trivial_plain``: ``print(sum(range(i)))`` for varying ``i``;
* ``trivial_wrapped``: the same, wrapped;
* ``mixed_plain``, ``mixed_wrapped``: math and trivial calls alternated in one phase, as a trajectory's
  tool calls come (one template for both: its shape says nothing of which needs sympy).

After a warm-up (every slot's scientific parent started), ``--rounds`` rounds each run the six phases
of ``--n`` calls, the order of plain and wrapped swapped every round, so a shared machine's drift falls
on both.  Reports per kind the median rate over the rounds (and with ``--cpu`` the stack's CPU per
call), and the median over rounds of each round's wrapped / plain ratio, for math, trivial and mixed
calls.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from toolkit.bench.mathcalls import math_case, run_phase, runtime_of, warm_math
from toolkit.bench.templates import rstar_shape
from toolkit.client import JudgeClient

__all__ = ['KINDS', 'cases_of', 'wrapped_scenario']

GROUPS = ('math', 'trivial', 'mixed')
KINDS = tuple(f'{group}_{form}' for group in GROUPS for form in ('plain', 'wrapped'))
SWAPPED = tuple(f'{group}_{form}' for group in GROUPS for form in ('wrapped', 'plain'))
"""`KINDS` with each group's wrapped phase first (every other round)."""


def _trivial_case(i: int) -> tuple[str, str]:
    return f'print(sum(range({i})))', str(i * (i - 1) // 2)


def cases_of(kind: str, n: int) -> list[tuple[str, str]]:
    """``n`` programs of ``kind`` with their expected stdout."""
    if kind.startswith('math'):
        base = [math_case(i) for i in range(n)]
    elif kind.startswith('mixed'):
        base = [math_case(i // 2) if i % 2 == 0 else _trivial_case(i) for i in range(n)]
    else:
        base = [_trivial_case(i) for i in range(n)]
    if kind.endswith('wrapped'):
        return [(rstar_shape(code), want) for code, want in base]
    return base


async def wrapped_scenario(client: JudgeClient, args: argparse.Namespace) -> dict[str, Any]:
    """The rounds (see the module docstring); ``wrong`` counts every wrong answer."""
    _, workers = await runtime_of(client, args)
    await warm_math(client, workers)
    warm = [case for kind in KINDS for case in cases_of(kind, 6 * workers)]
    await run_phase(client, warm, args)  # each kind once per slot, unmeasured
    rounds: list[dict[str, dict[str, Any]]] = []
    for r in range(max(1, args.rounds)):
        order = KINDS if r % 2 == 0 else SWAPPED
        rounds.append({kind: await run_phase(client, cases_of(kind, args.n), args) for kind in order})
    out: dict[str, Any] = {
        'n': args.n,
        'rounds': len(rounds),
        'wrong': sum(p['wrong'] for r in rounds for p in r.values()),
    }
    for kind in KINDS:
        out[f'{kind}_per_s'] = statistics.median(r[kind]['per_s'] for r in rounds)
        if args.cpu:
            out[f'{kind}_cpu_ms'] = statistics.median(r[kind]['cpu_ms'] for r in rounds)
            out[f'{kind}_sandbox_cpu_ms'] = statistics.median(r[kind]['sandbox_cpu_ms'] for r in rounds)
            names = sorted({name for r in rounds for name in r[kind]['cpu_ms_by_kind']})
            out[f'{kind}_cpu_ms_by_process'] = {
                name: round(statistics.median(r[kind]['cpu_ms_by_kind'].get(name, 0.0) for r in rounds), 3)
                for name in names
            }
    for what in GROUPS:
        ratios = [r[f'{what}_wrapped']['per_s'] / r[f'{what}_plain']['per_s'] for r in rounds]
        out[f'ratio_{what}_wrapped_vs_plain'] = statistics.median(ratios)
        out[f'ratio_{what}_wrapped_vs_plain_rounds'] = [round(x, 3) for x in ratios]
    return out
