"""CPU per trivial submission in the worker's main process (consumer) and in its pool, by instance plan.

Starts a private Redis, a gateway and `deploy/worker.sh` with each plan given (e.g. ``1x2`` = one
instance of two pool processes, ``2x1`` = two of one), alternated ABBA..., and drives each with
`toolkit.bench rstar`; CPU is read from /proc per process tree (main processes vs everything under
them), so neighbours on a shared machine change the wall-clock figures more than these.

    python -m scripts.consumer_cpu --plans 1x2,2x1 --rounds 2 --n 2000 --port 18520
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from judge.stack import ROOT, gateway_command, redis_command, wait_port
from toolkit.bench import cli as bench


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in Path('/proc').iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / 'stat').read_text().rsplit(')', 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            out.setdefault(ppid, []).append(int(entry.name))
    return out


def _cpu_s(pid: int) -> float:
    try:
        fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / os.sysconf('SC_CLK_TCK')


def snapshot(script_pid: int) -> tuple[float, float]:
    """(CPU of the celery main processes, CPU of everything below them) under worker.sh."""
    kids = _children()
    mains = kids.get(script_pid, [script_pid])
    main_s = sum(_cpu_s(p) for p in mains)
    below, todo = 0.0, [c for m in mains for c in kids.get(m, [])]
    while todo:
        p = todo.pop()
        below += _cpu_s(p)
        todo += kids.get(p, [])
    return main_s, below


def measure(plan: str, args: argparse.Namespace, env: dict[str, str], log: Path) -> dict[str, float]:
    """Start worker.sh with ``plan`` (INSTANCESxPROCESSES), warm up, drive it, stop it."""
    instances, processes = plan.split('x')
    cmd = [str(ROOT / 'deploy' / 'worker.sh'), '-i', instances, '-c', processes, '-n', f'cpu{plan}']
    with open(log, 'ab') as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while log.read_text(errors='replace').count(f'@cpu{plan} ready.') < int(instances):
            if time.monotonic() > deadline:
                raise TimeoutError(f'{plan}: the instances did not start')
            time.sleep(0.2)
        url = f'http://127.0.0.1:{args.port + 1}'
        warm = bench.parse_args(['rstar', '--url', url, '--n', '200', '--senders', str(args.senders)])
        asyncio.run(bench.run_scenario('rstar', warm))
        before = snapshot(proc.pid)
        run = bench.parse_args(['rstar', '--url', url, '--n', str(args.n), '--senders', str(args.senders)])
        result = asyncio.run(bench.run_scenario('rstar', run))
        after = snapshot(proc.pid)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)
    return {
        'subs_per_s': result['subs_per_s'],
        'wrong': result['wrong'],
        'consumer_ms': (after[0] - before[0]) * 1000 / args.n,
        'pool_ms': (after[1] - before[1]) * 1000 / args.n,
    }


def main() -> int:
    """Run the plans alternately and print one JSON line per measurement."""
    parser = argparse.ArgumentParser(prog='python -m scripts.consumer_cpu', description=__doc__.split('\n')[0])
    parser.add_argument('--plans', default='1x2,2x1', help='comma-separated INSTANCESxPROCESSES')
    parser.add_argument('--rounds', type=int, default=2, help='ABBA rounds (each runs every plan twice)')
    parser.add_argument('--n', type=int, default=2000, help='trivial submissions per measurement')
    parser.add_argument('--senders', type=int, default=8)
    parser.add_argument('--port', type=int, default=18520, help='Redis port; the gateway takes the next one')
    args = parser.parse_args()
    plans = args.plans.split(',')
    work = Path(tempfile.mkdtemp(prefix='judge-work-cpu-'))
    env = dict(os.environ)
    env.update(
        REDIS_URI=f'redis://127.0.0.1:{args.port}/0',
        JUDGE_PYTHON=sys.executable,
        JUDGE_WORK_ROOT=str(work / 'work'),
        JUDGE_CACHE_DIR=str(work / 'cache'),
        MAX_EXECUTION_TIME='4',
    )
    redis = redis_command(args.port, work)
    services = [subprocess.Popen(redis, stdout=subprocess.DEVNULL, start_new_session=True)]
    wait_port(args.port)
    gateway = gateway_command(sys.executable, args.port + 1)
    services.append(subprocess.Popen(gateway, env=env, cwd=ROOT, start_new_session=True))
    try:
        wait_port(args.port + 1, 60)
        for r in range(args.rounds):
            order = plans + plans[::-1]
            for plan in order:
                row = measure(plan, args, env, work / f'worker-{plan}.log')
                line = {'round': r, 'plan': plan} | {k: round(v, 3) for k, v in row.items()}
                sys.stdout.write(json.dumps(line) + '\n')
                sys.stdout.flush()
    finally:
        for svc in services:
            svc.terminate()
            svc.wait(30)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
