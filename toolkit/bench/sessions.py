"""``python -m toolkit.bench sessions``: live sessions against today's replay (docs/benchmarks.md).

Four measurements, every answer checked:

* **trajectory**: ``--trajectories`` 10-call sympy trajectories (`TRAJECTORY`), as live sessions and as
  replay (each call k sends the k-1 earlier cells and the new one, `toolkit.wrapper.wrap_code`), run one
  mode after the other; the whole stack's CPU per trajectory from ``/proc`` (`toolkit.bench.cpu`, so run
  the bench on the stack's host) and the ratio replay / sessions;
* **call cost**: ``--trajectories`` trajectories whose calls 2 to 10 do the same sympy work (`STEADY`),
  one after the other, both ways: the median latency and cell cost of call 10 against call 2;
* **fork**: a sympy-loaded session forked into ``--fork-n`` (16), ``--fork-rounds`` times: the HTTP
  answer's latency and the session host's own fork time (medians);
* **idle memory**: ``--idle`` sessions that imported sympy and ran a cell, then left idle: the memory
  the nodes' session hosts report (their cgroups' charge, ``GET /sessions``) per session, and whether
  they all stayed live within ``JUDGE_SESSION_MEMORY_MB``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from toolkit.bench.cpu import cpu_delta, cpu_snapshot
from toolkit.client import JudgeClient
from toolkit.policy import BatchPolicy
from toolkit.sessions.client import Sessions
from toolkit.sessions.notebooks import Notebooks
from toolkit.shared import close_shared

TRAJECTORY = (
    ('import sympy as sp\nx, y, n = sp.symbols("x y n")', None),
    ('roots = sp.solve(x**2 - 5*x + 6, x)\nroots', '[2, 3]'),
    ('f = sp.expand((x + 2)**3)\nf', 'x**3 + 6*x**2 + 12*x + 8'),
    ('sp.factor(f - 8)', 'x*(x**2 + 6*x + 12)'),
    ('area = sp.integrate(x**2, (x, 0, 3))\narea', '9'),
    ('sp.diff(sp.sin(x) * x**2, x)', 'x**2*cos(x) + 2*x*sin(x)'),
    ('total = sp.summation(n**2, (n, 1, 10))\ntotal', '385'),
    ('sp.simplify((x**2 - 1) / (x - 1))', 'x + 1'),
    ('sol = sp.solve([x + y - 10, x - y - 2], [x, y])\nsol[x] * sol[y]', '24'),
    ('area + total + sum(roots)', '399'),
)
"""Cells of one trajectory and the value each must show (None: no value)."""
STEADY = (
    ('import sympy as sp\nx = sp.Symbol("x")\ndone = []', None),
    *(('sp.core.cache.clear_cache()\ndone.append(sp.factor(x**12 - 1))\nlen(done)', str(k)) for k in range(1, 10)),
)
"""A trajectory whose calls 2 to 10 do the same work (sympy's cache cleared first): call k against call 2."""


def _text(result: Any) -> str | None:
    value = getattr(result, 'value', None)
    if value is not None:
        return str(value)
    out = (result.stdout or '').strip()
    return out or None


async def _trajectories(
    url: str, mode: str, count: int, cells: tuple[tuple[str, str | None], ...] = TRAJECTORY, at_once: bool = True
) -> tuple[list[list[Any]], int]:
    """``count`` trajectories of ``cells`` in ``mode`` (at once, or one after the other); their results by
    call, and how many answers were wrong."""
    notebooks = Notebooks(url, BatchPolicy(deadline_s=600, request_timeout_s=300), mode=mode)

    async def one(i: int) -> list[Any]:
        key = f'bench-{mode}-{i}-{time.monotonic_ns()}'
        out = []
        for code, _ in cells:
            started = time.monotonic()
            result = await notebooks.run(key, code)
            result.latency_s = time.monotonic() - started
            out.append(result)
        await notebooks.close(key)
        return out

    if at_once:
        runs = list(await asyncio.gather(*(one(i) for i in range(count))))
    else:
        runs = [await one(i) for i in range(count)]
    await notebooks.aclose()
    wrong = sum(1 for run in runs for r, (_, want) in zip(run, cells, strict=True) if _text(r) != want)
    return runs, wrong


def _cpu(before: Any, after: Any) -> float:
    return sum(cpu_delta(before, after).values())


async def trajectory_cpu(args: argparse.Namespace) -> dict[str, Any]:
    """Stack CPU per trajectory, sessions then replay; call 10 against call 2."""
    out: dict[str, Any] = {}
    warm, _ = await _trajectories(args.url, 'sessions', 1)  # the session host and its warm parents start here
    del warm
    for mode in ('sessions', 'replay'):
        before = cpu_snapshot(args.cpu_match, args.cpu_root)
        _, wrong = await _trajectories(args.url, mode, args.trajectories)
        cpu_s = _cpu(before, cpu_snapshot(args.cpu_match, args.cpu_root))
        out[f'{mode}_cpu_s_per_trajectory'] = round(cpu_s / args.trajectories, 3)
        out['wrong'] = out.get('wrong', 0) + wrong
    ratio = out['replay_cpu_s_per_trajectory'] / max(out['sessions_cpu_s_per_trajectory'], 1e-9)
    out['replay_over_sessions_cpu'] = round(ratio, 2)
    for mode in ('sessions', 'replay'):  # the steady trajectory, one at a time: latency without contention
        steady, wrong = await _trajectories(args.url, mode, args.trajectories, STEADY, at_once=False)
        out['wrong'] += wrong
        for k in (1, 9):
            out[f'{mode}_call{k + 1}_latency_ms'] = round(statistics.median(r[k].latency_s for r in steady) * 1000, 1)
            out[f'{mode}_call{k + 1}_cost_ms'] = round(statistics.median(r[k].cost for r in steady) * 1000, 1)
        call2 = max(out[f'{mode}_call2_latency_ms'], 1e-9)
        out[f'{mode}_call10_over_call2_latency'] = round(out[f'{mode}_call10_latency_ms'] / call2, 2)
    return out


async def fork_latency(args: argparse.Namespace) -> dict[str, Any]:
    """A sympy-loaded session forked into ``args.fork_n``, ``args.fork_rounds`` times."""
    async with Sessions(args.url, deadline_s=600) as sessions:
        source = await sessions.create(kind='scientific')
        await source.run('import sympy as sp\nx = sp.Symbol("x")\nsp.solve(x**2 - 4, x)')
        client = sessions.client
        http_s, host_s, wrong = [], [], 0
        for _ in range(args.fork_rounds):
            started = time.monotonic()
            answer = await client.request('POST', f'/sessions/{source.id}/fork', {'n': args.fork_n})
            http_s.append(time.monotonic() - started)
            host_s.append(float(answer.get('fork_s') or 0.0))
            kids = [c['session_id'] for c in answer['children']]
            wrong += sum(c['mode'] != 'process' for c in answer['children'])
            check = await sessions.run(kids[-1], 'sp.solve(x**2 - 9, x)')
            wrong += check.value != '[-3, 3]'
            await asyncio.gather(*(sessions.close(k) for k in kids))
        await source.close()
    return {
        'fork_n': args.fork_n,
        'fork_http_ms_median': round(statistics.median(http_s) * 1000, 1),
        'fork_http_ms_min': round(min(http_s) * 1000, 1),
        'fork_host_ms_median': round(statistics.median(host_s) * 1000, 1),
        'fork_host_ms_min': round(min(host_s) * 1000, 1),
        'wrong': wrong,
    }


async def idle_memory(args: argparse.Namespace) -> dict[str, Any]:
    """``args.idle`` sympy-loaded sessions left idle; the memory the session hosts report."""
    async with Sessions(args.url, deadline_s=900) as sessions:
        gate = asyncio.Semaphore(8)

        async def one() -> Any:
            async with gate:
                session = await sessions.create(kind='scientific')
                result = await session.run('import sympy as sp\nx = sp.Symbol("x")\nsp.factor(x**2 - 1)')
                return session, result.value == '(x - 1)*(x + 1)'

        made = await asyncio.gather(*(one() for _ in range(args.idle)))
        await asyncio.sleep(4)  # the hosts measure their sessions every 2 s and publish on their next call
        await sessions.run(made[-1][0].id, '1')
        nodes = (await sessions.client.request('GET', '/sessions'))['nodes']
        infos = await asyncio.gather(*(sessions.info(s.id) for s, _ in made))
        live = sum(1 for info in infos if info['live'])
        total_sessions = sum(int(n.get('sessions') or 0) for n in nodes.values())
        memory = sum(int(n.get('memory_bytes') or 0) for n in nodes.values())
        if not args.keep_idle:
            await asyncio.gather(*(s.close() for s, _ in made))
    return {
        'idle_sessions': args.idle,
        'idle_live_after': live,
        'host_sessions': total_sessions,
        'idle_memory_mb_total': round(memory / 2**20, 1),
        'idle_memory_mb_per_session': round(memory / 2**20 / max(total_sessions, 1), 2),
        'wrong': sum(not ok for _, ok in made),
    }


async def sessions_scenario(client: JudgeClient, args: argparse.Namespace) -> dict[str, Any]:
    """The four measurements of the module's docstring (``--parts`` picks some)."""
    del client
    out: dict[str, Any] = {'n': args.trajectories, 'wrong': 0}
    parts = {'trajectory': trajectory_cpu, 'fork': fork_latency, 'idle': idle_memory}
    for name in args.parts.split(','):
        got = await parts[name](args)
        out['wrong'] += got.pop('wrong', 0)
        out |= got
    await close_shared()
    return out
