"""What a compatible door costs, and how the SandboxFusion door compares with SandboxFusion's own server.

``doors``: a private stack (``python -m judge.stack`` on free ports: its own Redis, one worker, the
gateway); the same Python programs through the native ``/run`` and through each door (SandboxFusion
``/run_code``, Piston ``/api/v2/execute``, Judge0 ``/submissions?wait=true``) at the same concurrency,
in rounds that rotate the order; per route: throughput, p50 latency and CPU seconds per submission of
the whole stack (gateway, Redis, worker, sandbox; Flower left out), read from ``/proc``
(`toolkit.bench.cpu`), and the door's extra CPU over the native route.

``verl``: verl's own SandboxFusion client (``call_sandbox_api``, run in verl's venv) from a thread pool
with a semaphore, as verl's reward does, against each ``--target NAME=URL@PID`` in turn (URL the
``/run_code`` endpoint, PID the root of the server's process tree); same report.

    .venv/bin/python scripts/bench_doors.py doors --n 400 --concurrency 32 --rounds 2
    .venv-verl-0.9.1/bin/python scripts/bench_doors.py verl --target judge=http://127.0.0.1:8088/run_code@PID ...
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from toolkit.bench.cpu import cpu_delta, cpu_snapshot  # noqa: E402

PROGRAMS = {
    'trivial': 'print(1)',
    'sympy': 'import sympy\nx = sympy.Symbol("x")\nprint(sympy.integrate(x**3 * sympy.sin(x), x))',
}
ROUTES: dict[str, tuple[str, Callable[[str], dict[str, Any]], Callable[[Any], bool]]] = {
    'native': ('/run', lambda c: {'type': 'python', 'solution': c}, lambda r: bool(r['success'])),
    'sandboxfusion': ('/run_code', lambda c: {'code': c, 'language': 'python'}, lambda r: r['status'] == 'Success'),
    'piston': (
        '/api/v2/execute',
        lambda c: {'language': 'python', 'version': '*', 'files': [{'content': c}]},
        lambda r: r['run']['code'] == 0,
    ),
    'judge0': (
        '/submissions?wait=true',
        lambda c: {'source_code': c, 'language_id': 71},
        lambda r: r['status']['id'] == 3,
    ),
}
LEFT_OUT = ('flower', 'other')


def say(line: str) -> None:
    """One line of the report on stdout."""
    sys.stdout.write(line + '\n')
    sys.stdout.flush()


def cpu_used(before: Any, after: Any) -> tuple[float, float, dict[str, float]]:
    """(whole stack, gateway, by kind) CPU seconds between two snapshots, Flower and strangers left out."""
    used = cpu_delta(before, after)
    return sum(v for k, v in used.items() if k not in LEFT_OUT), used.get('gateway', 0.0), used


def report(
    name: str, n: int, wall_s: float, latencies: list[float], errors: int, cpu: tuple[float, float, dict[str, float]]
) -> dict[str, Any]:
    return {
        'route': name,
        'n': n,
        'errors': errors,
        'per_s': round(n / wall_s, 1),
        'p50_ms': round(1000 * statistics.median(latencies), 1) if latencies else None,
        'cpu_ms_per_sub': round(1000 * cpu[0] / n, 2),
        'gateway_cpu_ms_per_sub': round(1000 * cpu[1] / n, 2),
        'cpu_ms_per_sub_by_kind': {k: round(1000 * v / n, 2) for k, v in sorted(cpu[2].items()) if v},
    }


# --- doors: aiohttp against a private stack --------------------------------------------------------


async def _load(url: str, route: str, program: str, n: int, concurrency: int) -> tuple[float, list[float], int]:
    import aiohttp

    path, body, ok = ROUTES[route]
    latencies: list[float] = []
    errors = 0
    todo = iter(range(n))

    async def sender(session: aiohttp.ClientSession) -> None:
        nonlocal errors
        for _ in todo:
            t0 = time.perf_counter()
            async with session.post(url + path, json=body(program)) as resp:
                answer = await resp.json(content_type=None)
            latencies.append(time.perf_counter() - t0)
            if resp.status not in (200, 201) or not ok(answer):
                errors += 1

    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=concurrency)) as session:
        t0 = time.perf_counter()
        await asyncio.gather(*(sender(session) for _ in range(concurrency)))
        return time.perf_counter() - t0, latencies, errors


def doors(args: argparse.Namespace) -> list[dict[str, Any]]:
    from judge.stack import free_port, wait_port

    ports = [free_port() for _ in range(3)]
    env = {k: v for k, v in os.environ.items() if k != 'REDIS_URI'}
    env |= {'JUDGE_GATEWAY_PORT': str(ports[0]), 'JUDGE_FLOWER_PORT': str(ports[1]), 'JUDGE_REDIS_PORT': str(ports[2])}
    log = open(ROOT / '.run' / 'bench-doors-stack.log', 'w')
    stack = subprocess.Popen([sys.executable, '-m', 'judge.stack'], cwd=ROOT, env=env, stdout=log, stderr=log)
    url = f'http://127.0.0.1:{ports[0]}'
    out: list[dict[str, Any]] = []
    try:
        wait_port(ports[0], 120)
        routes = list(ROUTES)
        for program_name, program in PROGRAMS.items():
            n = args.n if program_name == 'trivial' else args.n_sympy
            for route in routes:  # warm up: compiles, warm parents, connections
                asyncio.run(_load(url, route, program, 2 * args.concurrency, args.concurrency))
            for rnd in range(args.rounds):
                order = routes[rnd % len(routes) :] + routes[: rnd % len(routes)]
                for route in order:
                    before = cpu_snapshot(root_pid=stack.pid)
                    wall, lat, errors = asyncio.run(_load(url, route, program, n, args.concurrency))
                    row = report(route, n, wall, lat, errors, cpu_used(before, cpu_snapshot(root_pid=stack.pid)))
                    out.append({'program': program_name, 'round': rnd} | row)
                    say(json.dumps(out[-1]))
    finally:
        stack.terminate()
        stack.wait(60)
        log.close()
    return out


def summary(rows: list[dict[str, Any]]) -> None:
    """Mean of the rounds per program and route, and each door's extra CPU over the native route."""
    for program in PROGRAMS:
        mine = [r for r in rows if r['program'] == program]
        if not mine:
            continue
        means = {}
        for route in dict.fromkeys(r['route'] for r in mine):
            these = [r for r in mine if r['route'] == route]
            means[route] = {k: statistics.mean(r[k] for r in these) for k in ('per_s', 'p50_ms', 'cpu_ms_per_sub')}
            means[route]['errors'] = sum(r['errors'] for r in these)
        base = means.get('native', {}).get('cpu_ms_per_sub')
        say(f'\n{program}: route, submissions/s, p50 ms, CPU ms/submission, vs native, errors')
        for route, m in means.items():
            extra = f'{100 * (m["cpu_ms_per_sub"] / base - 1):+.1f}%' if base else ''
            figures = f'{m["per_s"]:8.1f} {m["p50_ms"]:8.1f} {m["cpu_ms_per_sub"]:8.2f}'
            say(f'  {route:14} {figures} {extra:>8} {m["errors"]}')


# --- verl: verl's own client against several servers ------------------------------------------------


def verl(args: argparse.Namespace) -> list[dict[str, Any]]:
    import multiprocessing

    from verl.utils.reward_score.sandbox_fusion.utils import call_sandbox_api

    semaphore = multiprocessing.Manager().Semaphore(args.concurrency)
    out: list[dict[str, Any]] = []

    def one(url: str, code: str, _: int = 0) -> tuple[float, bool]:
        t0 = time.perf_counter()
        with semaphore:
            answer, error = call_sandbox_api(url, code, None, 10, 10, 1024)
        return time.perf_counter() - t0, error is None and answer is not None and answer.get('status') == 'Success'

    targets = [t.partition('=')[::2] for t in args.target]
    for program_name, program in PROGRAMS.items():
        n = args.n if program_name == 'trivial' else args.n_sympy
        for rnd in range(args.rounds):
            for name, where in targets[rnd % len(targets) :] + targets[: rnd % len(targets)]:
                url, _, pid = where.rpartition('@')
                call = functools.partial(one, url, program)
                with ThreadPoolExecutor(max(32, 5 * (os.cpu_count() or 1))) as pool:  # verl's pool size
                    list(pool.map(call, range(args.concurrency)))  # warm-up
                    before = cpu_snapshot('.', int(pid))
                    t0 = time.perf_counter()
                    done = list(pool.map(call, range(n)))
                    wall = time.perf_counter() - t0
                    after = cpu_snapshot('.', int(pid))
                used = cpu_delta(before, after)
                cpu = (sum(v for k, v in used.items() if k != 'flower'), used.get('gateway', 0.0), used)
                errors = sum(1 for _, ok in done if not ok)
                row = report(name, n, wall, [t for t, _ in done], errors, cpu)
                out.append({'program': program_name, 'round': rnd} | row)
                say(json.dumps(out[-1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='mode', required=True)
    for name in ('doors', 'verl'):
        p = sub.add_parser(name)
        p.add_argument('--n', type=int, default=400, help='trivial submissions per route and round')
        p.add_argument('--n-sympy', type=int, default=60, help='sympy submissions per route and round')
        p.add_argument('--concurrency', type=int, default=32)
        p.add_argument('--rounds', type=int, default=2)
        p.add_argument('--json', help='write every row here')
    sub.choices['verl'].add_argument('--target', action='append', required=True, help='NAME=URL@PID')
    args = parser.parse_args()
    run: Callable[[argparse.Namespace], list[dict[str, Any]]] = doors if args.mode == 'doors' else verl
    rows = run(args)
    summary(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == '__main__':
    main()
