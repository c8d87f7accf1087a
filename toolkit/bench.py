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
  node's submission runtime, measured in the same run (`toolkit.benchmath`).
* ``capacity``: trivial and scientific submissions with the CPU per submission of every process kind,
  then the capacity model (`toolkit.capacity`): each component's ceiling and the cluster size for
  ``--rate`` or ``--burst``/``--mean-latency-s`` and ``--mix`` (`toolkit.benchcap`).
* ``all``: longbatch, rstar, latency.

``--cpu`` adds the whole stack's CPU per submission from ``/proc/<pid>/stat`` (utime+stime, and
cutime+cstime for reaped children) of every process whose command line matches ``--cpu-match``,
except this one, by process kind (`toolkit.cpu`: gateway, redis, consumer, pool, slot_server,
zygote, program, flower, other; ``worker`` = consumer + pool, ``sandbox`` = slot servers, zygotes
and programs).  ``--cpu-root PID`` keeps only PID's process tree (several stacks on a host).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from toolkit.benchcap import capacity_scenario
from toolkit.benchmath import math_scenario
from toolkit.client import DEFAULT_BASE_URL, JudgeClient
from toolkit.cpu import DEFAULT_MATCH, cpu_delta, cpu_snapshot, rss_snapshot
from toolkit.errors import ToolkitError
from toolkit.models import Result, Submission
from toolkit.shared import close_shared

__all__ = ['cpu_delta', 'cpu_snapshot', 'main', 'per_submission', 'percentiles', 'rss_snapshot', 'run_scenario']

TRIVIAL = 'print(sum(range(10)))'
Scenario = Callable[[JudgeClient, argparse.Namespace], Awaitable[dict[str, Any]]]


def percentiles(values_s: list[float]) -> dict[str, float]:
    """p50/p90/p99/max of durations in seconds, as milliseconds (nearest-rank)."""
    if not values_s:
        return {'p50_ms': 0.0, 'p90_ms': 0.0, 'p99_ms': 0.0, 'max_ms': 0.0}
    ordered = sorted(values_s)

    def rank(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))] * 1000

    return {'p50_ms': rank(0.50), 'p90_ms': rank(0.90), 'p99_ms': rank(0.99), 'max_ms': ordered[-1] * 1000}


def per_submission(used: dict[str, float], n: int) -> dict[str, float]:
    """``cpu_ms_per_sub_<kind>`` for each process kind (`toolkit.cpu`), plus ``worker`` (consumer and pool
    processes), ``sandbox`` (slot servers, zygotes and programs) and ``total``."""
    per = {kind: cpu_s * 1000 / n for kind, cpu_s in used.items() if cpu_s}
    per['worker'] = per.get('consumer', 0.0) + per.get('pool', 0.0)
    per['sandbox'] = sum(per.get(k, 0.0) for k in ('slot_server', 'zygote', 'program'))
    per['total'] = sum(cpu_s for cpu_s in used.values()) * 1000 / n
    return {f'cpu_ms_per_sub_{k}': v for k, v in sorted(per.items())}


async def _redis_memory(url: str | None) -> dict[str, Any]:
    """``used_memory`` and the number of keys (``DBSIZE``): what a finished run leaves behind, whatever
    the keys' names (the judge's own are its business, not the client's)."""
    if not url:
        return {}
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    try:
        info = await client.info('memory')
        return {'used_memory': int(info['used_memory']), 'keys': int(await client.dbsize())}
    finally:
        await client.aclose()


def _expect_45(results: list[Result]) -> int:
    return sum(1 for r in results if not (r.ok and (r.stdout or '').strip() == '45'))


async def longbatch(client: JudgeClient, args: argparse.Namespace) -> dict[str, Any]:
    """N trivial submissions in one long-batch request."""
    start = time.perf_counter()
    results = await client.run_batch([Submission(TRIVIAL) for _ in range(args.n)], timeout_s=3600)
    wall_s = time.perf_counter() - start
    return {'n': args.n, 'wall_s': wall_s, 'subs_per_s': args.n / wall_s, 'wrong': _expect_45(results)}


async def rstar(client: JudgeClient, args: argparse.Namespace) -> dict[str, Any]:
    """N trivial submissions as ``senders`` concurrent loops posting ``per_request`` at a time."""
    chunks = [min(args.per_request, args.n - i) for i in range(0, args.n, args.per_request)]
    latencies_s: list[float] = []
    wrong = 0

    async def sender() -> None:
        nonlocal wrong
        while chunks:
            size = chunks.pop()
            t0 = time.perf_counter()
            results = await client.run_batch([Submission(TRIVIAL) for _ in range(size)], timeout_s=3600)
            latencies_s.append(time.perf_counter() - t0)
            wrong += _expect_45(results)
            if args.rstar_sleep_s:
                await asyncio.sleep(args.rstar_sleep_s)

    start = time.perf_counter()
    await asyncio.gather(*(sender() for _ in range(args.senders)))
    wall_s = time.perf_counter() - start
    out = {'n': args.n, 'wall_s': wall_s, 'subs_per_s': args.n / wall_s, 'wrong': wrong, 'requests': len(latencies_s)}
    return out | {f'request_{k}': v for k, v in percentiles(latencies_s).items()}


async def latency(client: JudgeClient, args: argparse.Namespace) -> dict[str, Any]:
    """N sequential single ``/run`` calls after ``warmup`` unmeasured ones."""
    for _ in range(args.warmup):
        await client.run(Submission(TRIVIAL))
    latencies_s: list[float] = []
    wrong = 0
    start = time.perf_counter()
    for _ in range(args.n):
        t0 = time.perf_counter()
        res = await client.run(Submission(TRIVIAL))
        latencies_s.append(time.perf_counter() - t0)
        wrong += _expect_45([res])
    return {'n': args.n, 'wall_s': time.perf_counter() - start, 'wrong': wrong} | percentiles(latencies_s)


async def toolcalls(client: JudgeClient, args: argparse.Namespace) -> dict[str, Any]:
    """N concurrent ``PythonTool`` calls (``x = i`` then ``x * 2``), each checked."""
    from toolkit.tools import PythonTool

    tool = PythonTool({'base_url': client.base_url})
    latencies_s: list[float] = []

    async def call(i: int) -> bool:
        t0 = time.perf_counter()
        iid, _ = await tool.create()
        resp, _, metrics = await tool.execute(iid, {'code': f'x = {i}\nx * 2', 'input': ''})
        await tool.release(iid)
        latencies_s.append(time.perf_counter() - t0)
        return bool(resp.text.startswith(f'Tool call success\nstdout: {2 * i}\n\n') and not metrics['infra_error'])

    cpu0, start = time.process_time(), time.perf_counter()
    oks = await asyncio.gather(*(call(i) for i in range(args.n)))
    wall_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu0
    await close_shared()
    out = {'n': args.n, 'wall_s': wall_s, 'calls_per_s': args.n / wall_s, 'wrong': oks.count(False)}
    return out | percentiles(latencies_s) | {'client_cpu_ms_per_call': cpu_s * 1000 / args.n}


async def _warm_up(client: JudgeClient, timeout_s: float = 120.0) -> None:
    """Wait until the stack answers a submission (a fresh worker may still be starting)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            res = await client.run_batch([Submission(TRIVIAL)], timeout_s=30)
            if not _expect_45(res):
                return
        except ToolkitError:
            pass
        if time.monotonic() > deadline:
            raise ToolkitError(f'the stack did not answer a trivial submission within {timeout_s:.0f} s')
        await asyncio.sleep(1.0)


async def soak(client: JudgeClient, args: argparse.Namespace) -> dict[str, Any]:
    """N trivial submissions from ``agents`` concurrent callers through one ``RequestProcessor``."""
    from toolkit.batcher import RequestProcessor
    from toolkit.policy import BatchPolicy

    await _warm_up(client)
    redis_before = await _redis_memory(args.redis_url)
    policy = BatchPolicy(
        max_batch_size=args.per_request,
        max_batches_in_flight=args.senders,
        route='/run/long-batch',
        deadline_s=3600.0,
        request_timeout_s=600.0,
    )
    left = args.n
    wrong = errors = 0
    peaks: dict[str, float] = {}
    hwm: dict[str, float] = {}

    def sample() -> None:
        for comp, (rss, peak) in rss_snapshot(args.cpu_match, args.cpu_root).items():
            peaks[comp] = max(peaks.get(comp, 0.0), rss)
            hwm[comp] = max(hwm.get(comp, 0.0), peak)

    async def agent(proc: RequestProcessor) -> None:
        nonlocal left, wrong, errors
        while left > 0:
            left -= 1
            try:
                res = await proc.submit(Submission(TRIVIAL))
            except ToolkitError:
                errors += 1
                continue
            wrong += _expect_45([res])

    async def monitor(stop: asyncio.Event) -> None:
        while not stop.is_set():
            sample()
            try:
                await asyncio.wait_for(stop.wait(), args.sample_s)
            except TimeoutError:
                pass

    sample()
    rss_before = dict(peaks)
    stop = asyncio.Event()
    watcher = asyncio.create_task(monitor(stop))
    start = time.perf_counter()
    async with RequestProcessor(client.base_url, policy) as proc:
        await asyncio.gather(*(agent(proc) for _ in range(min(args.agents, args.n))))
        stats = proc.stats()
    wall_s = time.perf_counter() - start
    stop.set()
    await watcher
    sample()
    out: dict[str, Any] = {
        'n': args.n,
        'wall_s': wall_s,
        'subs_per_s': args.n / wall_s,
        'wrong': wrong + errors,
        'errors': errors,
        'answered': stats['answered'],
        'requests': stats['batches'],
        'retries': stats['retries'],
        'mean_batch_size': stats['mean_batch_size'],
    }
    out |= {f'rss_mb_before_{k}': v for k, v in sorted(rss_before.items())}
    out |= {f'rss_mb_peak_{k}': v for k, v in sorted(peaks.items())}
    out |= {f'rss_mb_end_{k}': v for k, (v, _) in sorted(rss_snapshot(args.cpu_match, args.cpu_root).items())}
    out |= {f'hwm_mb_max_process_{k}': v for k, v in sorted(hwm.items())}
    if args.redis_url:
        after: dict[str, Any] = {}
        for _ in range(60):  # per-request keys go as requests finish; allow stragglers to expire
            after = await _redis_memory(args.redis_url)
            if after['keys'] <= redis_before['keys']:
                break
            await asyncio.sleep(1.0)
        out |= {f'redis_{k}_before': v for k, v in redis_before.items()}
        out |= {f'redis_{k}_after': v for k, v in after.items()}
        out['redis_used_memory_delta'] = after['used_memory'] - redis_before['used_memory']
    return out


SCENARIOS: dict[str, Scenario] = {
    'longbatch': longbatch,
    'rstar': rstar,
    'latency': latency,
    'toolcalls': toolcalls,
    'soak': soak,
    'math': math_scenario,
    'capacity': capacity_scenario,
}


async def run_scenario(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run one scenario (with ``--cpu`` accounting if asked); errors count as one wrong result."""
    before = cpu_snapshot(args.cpu_match, args.cpu_root) if args.cpu else {}
    async with JudgeClient(args.url, timeout_s=3600) as client:
        try:
            out = await SCENARIOS[name](client, args)
        except ToolkitError as e:
            out = {'n': args.n, 'wrong': args.n, 'error': str(e)}
    if args.cpu and name not in ('math', 'capacity'):  # those report the CPU of each of their phases
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
    parser.add_argument('--cpu-root', type=int, help='count only this pid and its descendants (e.g. scripts.stack)')
    parser.add_argument('--agents', type=int, default=1024, help='soak: concurrent callers (rollouts)')
    parser.add_argument('--redis-url', default=None, help="soak: the stack's Redis, for used_memory before/after")
    parser.add_argument('--sample-s', type=float, default=0.5, help='soak: RSS sampling period')
    parser.add_argument('--runtime-python', default='', help="math: the runtime's python (default: from /status)")
    parser.add_argument('--spawn-n', type=int, default=40, help='math: bare spawns per measurement')
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


if __name__ == '__main__':
    sys.exit(main())
