"""Benchmarks against a running gateway: ``python -m toolkit.bench <scenario> [--url URL] [--n N] [--json]``.

Scenarios (every result is checked; the exit status is 1 if any is wrong):

* ``longbatch``: N trivial submissions ``print(sum(range(10)))`` in ONE ``POST /run/long-batch``.
* ``rstar``: the same N as 8 concurrent senders x 32 per request (rStar2-Agent's shape);
  ``--rstar-sleep-s 0.5`` adds rStar's pause after every batch, for comparison.
* ``latency``: N sequential ``POST /run`` after a few warm-ups: p50/p90/p99/max.
* ``toolcalls``: N concurrent calls through ``PythonTool`` (create/execute/release, as verl does):
  latency per call and the bench process's own CPU per call (``time.process_time``).
* ``soak``: N trivial submissions the way an RL step sends them: ``--agents`` concurrent callers each
  ``submit()`` one at a time through one ``RequestProcessor`` (``--per-request`` per long-batch request,
  ``--senders`` requests in flight).  Checks every answer, samples the peak RSS of redis / gateway /
  worker (+ sandbox) from ``/proc`` (``--cpu-match`` / ``--cpu-root`` select the processes), and with
  ``--redis-url`` reports Redis ``used_memory`` and key count before and after (results must be cleaned up).
  ``make soak`` runs 45,000 against a private stack.
* ``math``: rStar-style sympy/numpy/itertools tool calls, every answer checked, and trivial Python,
  against the bare spawn rates of ``python -c "import sympy, numpy"`` and ``python3 -I -S`` in the
  node's submission runtime, measured in the same run (`toolkit.bench.mathcalls`).
* ``capacity``: trivial and scientific submissions with the CPU per submission of every process kind,
  then the capacity model (`toolkit.bench.model`): each component's ceiling and the cluster size for
  ``--rate`` or ``--burst``/``--mean-latency-s`` and ``--mix`` (`toolkit.bench.capacity`).
* ``wrapped``: math and trivial tool calls plain and inside rStar2-Agent's template shape, alternated
  in rounds: rates, CPU per call and the wrapped / plain ratios (`toolkit.bench.wrapped`).
* ``sessions``: live sessions against replay: a 10-call sympy trajectory's stack CPU both ways, call 10
  against call 2, forking a sympy-loaded session into 16, memory per idle session (`toolkit.bench.sessions`).
* ``all``: longbatch, rstar, latency.

``--cpu`` adds the whole stack's CPU per submission from ``/proc/<pid>/stat`` (utime+stime, and
cutime+cstime for reaped children) of every process whose command line matches ``--cpu-match``,
except this one, by process kind (`toolkit.bench.cpu`: gateway, redis, consumer, pool, slot_server,
zygote, program, flower, other; ``worker`` = consumer + pool, ``sandbox`` = slot servers, zygotes
and programs).  ``--cpu-root PID`` keeps only PID's process tree (several stacks on a host).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from toolkit.bench.capacity import capacity_scenario
from toolkit.bench.cpu import DEFAULT_MATCH, cpu_delta, cpu_snapshot, rss_snapshot
from toolkit.bench.load import latency, longbatch, per_submission, percentiles, rstar, soak, toolcalls
from toolkit.bench.mathcalls import math_scenario
from toolkit.bench.sessions import sessions_scenario
from toolkit.bench.wrapped import wrapped_scenario
from toolkit.client import DEFAULT_BASE_URL, JudgeClient
from toolkit.errors import ToolkitError

__all__ = ['cpu_delta', 'cpu_snapshot', 'main', 'per_submission', 'percentiles', 'rss_snapshot', 'run_scenario']

Scenario = Callable[[JudgeClient, argparse.Namespace], Awaitable[dict[str, Any]]]


SCENARIOS: dict[str, Scenario] = {
    'longbatch': longbatch,
    'rstar': rstar,
    'latency': latency,
    'toolcalls': toolcalls,
    'soak': soak,
    'math': math_scenario,
    'capacity': capacity_scenario,
    'wrapped': wrapped_scenario,
    'sessions': sessions_scenario,
}


async def run_scenario(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run one scenario (with ``--cpu`` accounting if asked); errors count as one wrong result."""
    before = cpu_snapshot(args.cpu_match, args.cpu_root) if args.cpu else {}
    async with JudgeClient(args.url, timeout_s=3600) as client:
        try:
            out = await SCENARIOS[name](client, args)
        except ToolkitError as e:
            out = {'n': args.n, 'wrong': args.n, 'error': str(e)}
    if args.cpu and name not in (
        'math',
        'capacity',
        'wrapped',
        'sessions',
    ):  # those report the CPU of each of their phases
        out |= per_submission(cpu_delta(before, cpu_snapshot(args.cpu_match, args.cpu_root)), args.n)
    return {'scenario': name} | out


def _fmt(value: Any) -> str:
    return f'{value:.2f}' if isinstance(value, float) else str(value)


def _table(rows: list[dict[str, Any]]) -> str:
    lines = []
    for row in rows:
        lines.append(f'== {row["scenario"]}')
        lines += [f'  {key:<28} {_fmt(value)}' for key, value in row.items() if key != 'scenario']
    return '\n'.join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line arguments (see the module docstring)."""
    parser = argparse.ArgumentParser(prog='python -m toolkit.bench', description=__doc__.split('\n')[0])
    parser.add_argument('scenario', choices=[*SCENARIOS, 'all'])
    parser.add_argument('--url', default=DEFAULT_BASE_URL)
    parser.add_argument('--n', type=int, default=200, help='submissions (or tool calls) per scenario')
    parser.add_argument('--json', action='store_true', help='print one JSON object instead of a table')
    parser.add_argument('--senders', type=int, default=8, help='rstar: concurrent senders')
    parser.add_argument('--per-request', type=int, default=32, help='rstar: submissions per request')
    parser.add_argument('--rstar-sleep-s', type=float, default=0.0, help="rstar: pause after each batch (rStar's 0.5)")
    parser.add_argument('--warmup', type=int, default=3, help='latency: unmeasured calls first')
    parser.add_argument('--cpu', action='store_true', help='report the stack CPU per submission from /proc')
    parser.add_argument('--cpu-match', default=DEFAULT_MATCH, help='regex on command lines')
    parser.add_argument('--cpu-root', type=int, help='count only this pid and its descendants (e.g. judge.stack)')
    parser.add_argument('--agents', type=int, default=1024, help='soak: concurrent callers (rollouts)')
    parser.add_argument('--redis-url', default=None, help="soak: the stack's Redis, for used_memory before/after")
    parser.add_argument('--sample-s', type=float, default=0.5, help='soak: RSS sampling period')
    parser.add_argument('--runtime-python', default='', help="math: the runtime's python (default: from /status)")
    parser.add_argument('--spawn-n', type=int, default=40, help='math: bare spawns per measurement')
    parser.add_argument('--trivial-rounds', type=int, default=5, help='math: rounds of -I -S spawns + trivial phase')
    parser.add_argument('--spawn-concurrency', type=int, default=0, help='math: concurrent spawns (0: the workers)')
    parser.add_argument('--sci-n', type=int, default=300, help='capacity: scientific submissions')
    parser.add_argument('--rate', type=float, default=0.0, help='capacity: target submissions/s (else --burst)')
    parser.add_argument('--burst', type=int, default=45000, help='capacity: calls sent at once')
    parser.add_argument('--mean-latency-s', type=float, default=0.3, help="capacity: the burst's mean latency")
    parser.add_argument('--mix', default='trivial', help='capacity: e.g. trivial=0.5,scientific=0.5')
    parser.add_argument('--headroom', type=float, default=0.7, help='capacity: most a part may be busy')
    parser.add_argument('--profile-out', default='', help='capacity: save the measured profile (JSON)')
    parser.add_argument('--profile-in', default='', help='capacity: model a saved profile, measure nothing')
    parser.add_argument('--markdown', action='store_true', help='capacity: the sizing table for three mixes')
    parser.add_argument('--rounds', type=int, default=3, help='wrapped: rounds of the four phases')
    parser.add_argument('--trajectories', type=int, default=4, help='sessions: trajectories per mode, run at once')
    parser.add_argument('--fork-n', type=int, default=16, help='sessions: children per fork')
    parser.add_argument('--fork-rounds', type=int, default=5, help='sessions: forks measured')
    parser.add_argument('--idle', type=int, default=50, help='sessions: idle sessions made for the memory figure')
    parser.add_argument('--keep-idle', action='store_true', help='sessions: leave the idle sessions to their TTL')
    parser.add_argument('--parts', default='trajectory,fork,idle', help='sessions: which measurements')
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error('--n must be >= 1')
    return args


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the scenario(s), print a table (or JSON); 1 if any result was wrong."""
    args = parse_args(argv)
    names = ['longbatch', 'rstar', 'latency'] if args.scenario == 'all' else [args.scenario]
    rows = [asyncio.run(run_scenario(name, args)) for name in names]
    texts = [row.pop('text') for row in rows if 'text' in row]
    print(json.dumps({'url': args.url, 'scenarios': rows}) if args.json else '\n'.join(texts) or _table(rows))
    return 1 if any(row['wrong'] for row in rows) else 0
