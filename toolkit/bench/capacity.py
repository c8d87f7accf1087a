"""``python -m toolkit.bench capacity``: measure a stack's CPU per submission by process kind, then size a cluster.

Measures, against the running stack at ``--url`` (``--cpu-root PID`` picks its process tree on a
shared host), in rStar2-Agent's shape (``--senders`` loops of ``--per-request``):

* ``trivial``: ``--n`` ``print(sum(range(10)))``;
* ``scientific``: ``--sci-n`` sympy/numpy/itertools tool calls (`toolkit.bench.mathcalls.math_case`),
  each answer checked;
* a bare ``python3 -I -S -c pass`` start in the node's submission runtime (CPU per start), before
  and after.

From that profile (saved with ``--profile-out``, or read back with ``--profile-in`` instead of
measuring) `toolkit.bench.model` gives each component's ceiling, the cluster size for ``--rate`` (or
for a burst: ``--burst 45000 --mean-latency-s 0.3``) and ``--mix`` (e.g. ``trivial=0.5,scientific=0.5``),
and for a trivial submission where the whole stack's CPU goes, process kind by kind, against a bare
interpreter start.  ``--markdown`` prints the sizing table for the mixes trivial, scientific and
half of each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from typing import Any

from toolkit.bench import model as capacity
from toolkit.bench.cpu import KINDS, cpu_delta, cpu_snapshot, kinds, processes, select
from toolkit.bench.mathcalls import math_case, runtime_of, spawn_rate
from toolkit.client import JudgeClient
from toolkit.models import Submission

__all__ = ['capacity_scenario', 'report']

TRIVIAL = ('print(sum(range(10)))', '45')
MIXES = ('trivial', 'scientific', 'trivial=0.5,scientific=0.5')


async def _phase(client: JudgeClient, cases: list[tuple[str, str]], args: argparse.Namespace) -> dict[str, Any]:
    """Send ``cases``; throughput, wrong answers, mean execution time and CPU ms per submission by kind."""
    order = list(range(0, len(cases), args.per_request))
    wrong = 0
    costs: list[float] = []

    async def sender() -> None:
        nonlocal wrong
        while order:
            i = order.pop()
            chunk = cases[i : i + args.per_request]
            results = await client.run_batch([Submission(src) for src, _ in chunk], timeout_s=3600)
            for res, (_, want) in zip(results, chunk, strict=True):
                wrong += not (res.ok and (res.stdout or '').strip() == want)
                costs.append(res.cost)

    before = cpu_snapshot(args.cpu_match, args.cpu_root)
    start = time.perf_counter()
    await asyncio.gather(*(sender() for _ in range(args.senders)))
    wall_s = time.perf_counter() - start
    used = cpu_delta(before, cpu_snapshot(args.cpu_match, args.cpu_root))
    return {
        'n': len(cases),
        'per_s': len(cases) / wall_s,
        'wrong': wrong,
        'exec_s': sum(costs) / max(1, len(costs)),
        'cpu_ms': {kind: used.get(kind, 0.0) * 1000 / len(cases) for kind in KINDS},
    }


def topology(pattern: str, root_pid: int | None) -> dict[str, int]:
    """Live processes of each kind in the stack (the uvicorn supervisor of several gateway processes,
    which serves nothing itself, is not counted)."""
    procs = processes()
    by_pid = kinds(procs, select(procs, pattern, root_pid))
    counts: dict[str, int] = {}
    for pid, kind in by_pid.items():
        if kind == 'gateway' and any(by_pid.get(q) == 'gateway' and procs[q].ppid == pid for q in by_pid):
            continue
        counts[kind] = counts.get(kind, 0) + 1
    return counts


async def measure(client: JudgeClient, args: argparse.Namespace) -> dict[str, Any]:
    """The profile of the stack behind ``client`` (see the module docstring)."""
    python, workers = await runtime_of(client, args)
    bare = [python, '-I', '-S', '-c', 'pass']
    spawns = [await spawn_rate(bare, args.spawn_n, workers)]
    warm = [math_case(i) for i in range(6 * workers)] + [TRIVIAL] * (4 * workers)
    await _phase(client, warm, args)  # every kind of program once per slot, unmeasured
    trivial = await _phase(client, [TRIVIAL] * args.n, args)
    scientific = await _phase(client, [math_case(i) for i in range(args.sci_n)], args)
    spawns.append(await spawn_rate(bare, args.spawn_n, workers))
    return {
        'cores': os.cpu_count() or 1,
        'topology': topology(args.cpu_match, args.cpu_root),
        'runtime_python': python,
        'bare_python_IS_cpu_ms': sum(s['cpu_ms'] for s in spawns) / len(spawns),
        'classes': {'trivial': trivial, 'scientific': scientific},
    }


def _sizing(profile: dict[str, Any], mix_text: str, args: argparse.Namespace) -> dict[str, Any]:
    mixed = capacity.mix_profile(profile, capacity.parse_mix(mix_text))
    if args.rate:
        rate = args.rate
    else:
        rate = capacity.burst_rate(args.burst, args.mean_latency_s, mixed['exec_s'])
    return {'mix': mix_text, **capacity.size(mixed, rate, args.headroom), 'ceilings': capacity.ceilings(mixed)}


def report(profile: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The model's answers for ``profile``: ceilings, sizing, the trivial submission's CPU breakdown."""
    out: dict[str, Any] = {'profile': profile}
    trivial = profile['classes']['trivial']['cpu_ms']
    total = sum(trivial.values())
    bare = profile['bare_python_IS_cpu_ms']
    out['trivial_breakdown'] = {
        kind: {'cpu_ms': ms, 'share': ms / total if total else 0.0, 'of_bare_start': ms / bare if bare else 0.0}
        for kind, ms in trivial.items()
        if ms > 0
    }
    out['trivial_total_cpu_ms'] = total
    out['trivial_total_of_bare_start'] = total / bare if bare else 0.0
    mixes = MIXES if args.markdown else (args.mix,)
    out['sizing'] = []
    for mix_text in mixes:
        try:
            out['sizing'].append(_sizing(profile, mix_text, args))
        except ValueError as exc:
            out['sizing'].append({'mix': mix_text, 'error': str(exc)})
    return out


def text(rep: dict[str, Any], args: argparse.Namespace) -> str:
    """A readable report; with ``--markdown`` the sizing rows as a Markdown table."""
    prof = rep['profile']
    lines = [f'== capacity (measured on {prof["cores"]} cores, processes: {prof["topology"]})']
    for name, cls in prof['classes'].items():
        parts = ', '.join(f'{k} {v:.2f}' for k, v in cls['cpu_ms'].items() if v > 0)
        lines.append(
            f'  {name}: {cls["per_s"]:.0f}/s, execution {cls["exec_s"] * 1000:.1f} ms, wrong {cls["wrong"]}; '
            f'CPU ms per submission: {parts}'
        )
    bare = prof['bare_python_IS_cpu_ms']
    lines.append(
        f'  trivial submission, whole stack: {rep["trivial_total_cpu_ms"]:.2f} ms CPU = '
        f'{rep["trivial_total_of_bare_start"]:.2f} x a bare `python3 -I -S` start ({bare:.2f} ms):'
    )
    for kind, row in sorted(rep['trivial_breakdown'].items(), key=lambda kv: -kv[1]['cpu_ms']):
        lines.append(f'    {kind:<12} {row["cpu_ms"]:6.2f} ms  {row["share"]:6.1%}  {row["of_bare_start"]:5.2f} x bare')
    target = f'{args.rate:.0f}/s' if args.rate else f'a burst of {args.burst} at {args.mean_latency_s} s mean latency'
    lines.append(f'  sizing for {target}, parts at most {args.headroom:.0%} busy:')
    if args.markdown:
        lines += [
            '',
            '| mix | rate /s | gateway processes | Redis shards | worker instances (consumer-bound) '
            '| pool processes | cores |',
            '| --- | --- | --- | --- | --- | --- | --- |',
        ]
    for row in rep['sizing']:
        if 'error' in row:
            lines.append(f'  {row["mix"]}: {row["error"]}')
            continue
        if args.markdown:
            lines.append(
                f'| {row["mix"]} | {row["rate_per_s"]:,.0f} | {row["gateway_processes"]:,} | {row["redis_shards"]:,} '
                f'| {row["worker_instances"]:,} ({row["worker_instances_min"]:,}) | {row["pool_processes"]:,} '
                f'| {row["cores"]:,} |'
            )
            continue
        ceil = ', '.join(f'{k} {v:,.0f}/s' for k, v in row['ceilings'].items())
        lines.append(f'  {row["mix"]}: rate {row["rate_per_s"]:,.0f}/s; ceilings: {ceil}')
        lines.append(
            f'    gateway processes {row["gateway_processes"]}, Redis shards {row["redis_shards"]}, worker instances '
            f'{row["worker_instances"]} (consumers alone: {row["worker_instances_min"]}), pool processes '
            f'{row["pool_processes"]:,} on {row["pool_cores"]:,} cores, {row["cores"]:,} cores in all'
        )
    return '\n'.join(lines)


async def capacity_scenario(client: JudgeClient, args: argparse.Namespace) -> dict[str, Any]:
    """Measure (or read ``--profile-in``), then model; ``wrong`` counts wrong answers while measuring."""
    if args.profile_in:
        with open(args.profile_in) as f:
            profile = json.load(f)
    else:
        profile = await measure(client, args)
        if args.profile_out:
            with open(args.profile_out, 'w') as f:
                json.dump(profile, f, indent=1)
    rep = report(profile, args)
    wrong = sum(cls['wrong'] for cls in profile['classes'].values()) if not args.profile_in else 0
    return {'n': args.n, 'wrong': wrong, 'text': text(rep, args), **rep}
