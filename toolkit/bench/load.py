"""The load scenarios of `toolkit.bench`: longbatch, rstar, latency, toolcalls and soak (see its docstring).

Each takes a `JudgeClient` and the parsed command line and returns one flat dict of figures, with
``wrong`` the number of answers that were not the expected one.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from toolkit.bench.cpu import rss_snapshot
from toolkit.client import JudgeClient
from toolkit.errors import ToolkitError
from toolkit.models import Result, Submission
from toolkit.shared import close_shared

__all__ = ['TRIVIAL', 'latency', 'longbatch', 'per_submission', 'percentiles', 'rstar', 'soak', 'toolcalls', 'warm_up']

TRIVIAL = 'print(sum(range(10)))'


def percentiles(values_s: list[float]) -> dict[str, float]:
    """p50/p90/p99/max of durations in seconds, as milliseconds (nearest-rank)."""
    if not values_s:
        return {'p50_ms': 0.0, 'p90_ms': 0.0, 'p99_ms': 0.0, 'max_ms': 0.0}
    ordered = sorted(values_s)

    def rank(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))] * 1000

    return {'p50_ms': rank(0.50), 'p90_ms': rank(0.90), 'p99_ms': rank(0.99), 'max_ms': ordered[-1] * 1000}


def per_submission(used: dict[str, float], n: int) -> dict[str, float]:
    """``cpu_ms_per_sub_<kind>`` for each process kind (`toolkit.bench.cpu`), plus ``worker`` (consumer and pool
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
    from toolkit.verl.tools import PythonTool

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


async def warm_up(client: JudgeClient, timeout_s: float = 120.0) -> None:
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

    await warm_up(client)
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
