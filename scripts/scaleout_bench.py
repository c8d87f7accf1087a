"""Scale-out benchmark: one part against two, in one run, with the capacity model beside it.

Configurations, each a private stack (Redis shard(s), ``deploy/worker.sh``, ``judge-gateway``) on
ports from ``--port``, driven with `toolkit.bench rstar` (trivial submissions, rStar2-Agent's shape):

* ``base``: 1 gateway process, 1 Redis, 1 worker instance of 2 pool processes;
* ``inst2``: 1 gateway process, 1 Redis, 2 instances of 1 process;
* ``gw2``: 2 gateway processes (``--workers 2``, one port), 1 Redis, 1 instance of 2;
* ``shard2``: 1 gateway process, 2 Redis shards, 2 instances of 1 (one per shard).

Run alternately (each round: the list, then reversed), so drift on a shared machine hits every
configuration alike.  Per run: submissions/s and CPU ms per submission by process kind
(`toolkit.bench.cpu`), the load generator's own CPU, and the cores everything but the stack kept busy
(``/proc/stat``).  Then, from medians, the ratios ``inst2/base``, ``gw2/base``, ``shard2/inst2``, and
the capacity model's predictions (`toolkit.bench.model.predict`, from ``base``'s measured profile, on
``--cores`` cores and on the cores left to the stack) beside each measured rate, and each serial
part's ceiling from the configuration's own CPU per submission (see `summary`).

    python -m scripts.scaleout_bench --rounds 2 --n 2000 --port 18620 > scaleout.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from judge.stack import ROOT, gateway_command, redis_command, wait_port
from toolkit.bench import cli as bench
from toolkit.bench import model as capacity
from toolkit.bench.cpu import DEFAULT_MATCH, cpu_delta, cpu_snapshot

CONFIGS: dict[str, dict[str, int]] = {
    'base': {'gateway': 1, 'redis': 1, 'instances': 1, 'processes': 2},
    'inst2': {'gateway': 1, 'redis': 1, 'instances': 2, 'processes': 1},
    'gw2': {'gateway': 2, 'redis': 1, 'instances': 1, 'processes': 2},
    'shard2': {'gateway': 1, 'redis': 2, 'instances': 2, 'processes': 1},
}
PAIRS = (('inst2', 'base'), ('gw2', 'base'), ('shard2', 'inst2'))


def _start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, 'ab') as out:
        return subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def run_config(name: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Start configuration ``name``, warm it up, drive it, stop it; its figures."""
    cfg = CONFIGS[name]
    ports = [args.port + k for k in range(cfg['redis'])]
    gw_port = args.port + 10
    env = dict(os.environ)
    env.update(
        JUDGE_PYTHON=sys.executable,
        JUDGE_WORK_ROOT=str(work / 'work'),
        JUDGE_CACHE_DIR=str(work / 'cache'),
        MAX_EXECUTION_TIME='4',
        REDIS_URI=f'redis://127.0.0.1:{ports[0]}/0',
    )
    env.pop('PROMETHEUS_MULTIPROC_DIR', None)
    if cfg['redis'] > 1:
        env['JUDGE_BROKER_SHARDS'] = ','.join(f'redis://127.0.0.1:{p}/0' for p in ports)
    procs = [_start(redis_command(p, work), env, work / f'redis-{p}.log') for p in ports]
    log = work / f'worker-{name}.log'
    try:
        for p in ports:
            wait_port(p)
        worker = [str(ROOT / 'deploy' / 'worker.sh'), '-i', str(cfg['instances']), '-c', str(cfg['processes'])]
        procs.append(_start([*worker, '-n', name], env, log))
        procs.append(_start(gateway_command(sys.executable, gw_port, cfg['gateway']), env, work / f'gw-{name}.log'))
        deadline = time.monotonic() + 180
        while log.read_text(errors='replace').count(f'@{name} ready.') < cfg['instances']:
            if time.monotonic() > deadline or procs[-2].poll() is not None:
                raise RuntimeError(f'{name}: the worker instances did not start:\n{log.read_text()[-2000:]}')
            time.sleep(0.2)
        wait_port(gw_port, 60)
        url = f'http://127.0.0.1:{gw_port}'
        common = ['--url', url, '--senders', str(args.senders), '--per-request', str(args.per_request)]
        asyncio.run(bench.run_scenario('rstar', bench.parse_args(['rstar', '--n', '300', *common])))
        snap, busy0, own0, t0 = _snapshot(procs), machine_busy_s(), time.process_time(), time.perf_counter()
        result = asyncio.run(bench.run_scenario('rstar', bench.parse_args(['rstar', '--n', str(args.n), *common])))
        used = cpu_delta(snap, _snapshot(procs))
        busy_s, own_s, wall_s = machine_busy_s() - busy0, time.process_time() - own0, time.perf_counter() - t0
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    return {
        'config': name,
        'subs_per_s': result['subs_per_s'],
        'wrong': result['wrong'],
        'cpu_ms': {k: v * 1000 / args.n for k, v in used.items() if v > 0},
        'client_cpu_ms': own_s * 1000 / args.n,
        # Cores that everything but the stack (this load generator, other jobs) kept busy meanwhile.
        'other_cores': max(0.0, busy_s - sum(used.values())) / wall_s,
    }


def machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy (``/proc/stat``: all but idle and iowait)."""
    fields = [int(x) for x in Path('/proc/stat').read_text().split('\n', 1)[0].split()[1:]]
    busy = sum(fields[:8]) - fields[3] - fields[4]
    return busy / os.sysconf('SC_CLK_TCK')


def _snapshot(procs: list[subprocess.Popen[bytes]]) -> dict[tuple[int, str], tuple[str, float]]:
    out: dict[tuple[int, str], tuple[str, float]] = {}
    for proc in procs:
        out |= cpu_snapshot(DEFAULT_MATCH, proc.pid)
    return out


def _trivial(cpu_ms: dict[str, float]) -> dict[str, Any]:
    return capacity.mix_profile({'classes': {'trivial': {'cpu_ms': cpu_ms, 'exec_s': 0.0}}}, {'trivial': 1.0})


def summary(rows: list[dict[str, Any]], cores: float) -> dict[str, Any]:
    """Medians per configuration, the ratios of `PAIRS`, and the model's predictions from ``base``.

    Per configuration: the model's rate from ``base``'s CPU per submission on all ``cores``
    (``predicted_per_s``) and on the cores the stack had to itself (``stack_cores``: ``cores`` less
    what the load generator and other jobs kept busy; ``predicted_per_s_stack_cores``), and, from its
    own CPU per submission, each serial part's ceiling (count x 1000 / its ms): what one machine
    with enough cores would reach before that part is full.
    """
    med: dict[str, dict[str, Any]] = {}
    for name in CONFIGS:
        mine = [r for r in rows if r['config'] == name]
        if not mine:
            continue
        kinds = {k for r in mine for k in r['cpu_ms']}
        cpu = {k: statistics.median(r['cpu_ms'].get(k, 0.0) for r in mine) for k in sorted(kinds)}
        med[name] = {
            'subs_per_s': statistics.median(r['subs_per_s'] for r in mine),
            'cpu_ms': cpu,
            'client_cpu_ms': statistics.median(r['client_cpu_ms'] for r in mine),
            'other_cores': statistics.median(r['other_cores'] for r in mine),
            'runs': len(mine),
        }
    out: dict[str, Any] = {'medians': med, 'ratios': {}, 'predictions': {}}
    if 'base' not in med:
        return out
    from_base = _trivial(med['base']['cpu_ms'])
    for name, m in med.items():
        cfg = CONFIGS[name]
        topology = {
            'gateway': cfg['gateway'],
            'redis': cfg['redis'],
            'consumer': cfg['instances'],
            'pool': cfg['instances'] * cfg['processes'],
        }
        stack_cores = max(0.1, cores - m['other_cores'])
        naive = capacity.predict(from_base, topology, cores)
        fair = capacity.predict(from_base, topology, stack_cores)
        own = capacity.predict(_trivial(m['cpu_ms']), topology, stack_cores)
        out['predictions'][name] = {
            'measured_per_s': m['subs_per_s'],
            'predicted_per_s': naive['rate_per_s'],
            'bound': naive['bound'],
            'stack_cores': stack_cores,
            'predicted_per_s_stack_cores': fair['rate_per_s'],
            'ceilings': {k: v for k, v in own['limits'].items() if k in capacity.SERIAL_KINDS},
        }
    for a, b in PAIRS:
        if a in med and b in med:
            pa, pb = out['predictions'][a], out['predictions'][b]
            out['ratios'][f'{a}/{b}'] = {
                'throughput': med[a]['subs_per_s'] / med[b]['subs_per_s'],
                'cpu_per_sub': sum(med[a]['cpu_ms'].values()) / sum(med[b]['cpu_ms'].values()),
                'predicted_throughput': pa['predicted_per_s_stack_cores'] / pb['predicted_per_s_stack_cores'],
                'ceilings': {k: pa['ceilings'][k] / pb['ceilings'][k] for k in pa['ceilings'] if k in pb['ceilings']},
            }
    return out


def main() -> int:
    """Run the configurations alternately; one JSON line per run, then the summary line."""
    parser = argparse.ArgumentParser(prog='python -m scripts.scaleout_bench', description=__doc__.split('\n')[0])
    parser.add_argument('--configs', default=','.join(CONFIGS), help='comma-separated names')
    parser.add_argument('--rounds', type=int, default=2, help='each round runs the list, then reversed')
    parser.add_argument('--n', type=int, default=2000, help='trivial submissions per run')
    parser.add_argument('--senders', type=int, default=16)
    parser.add_argument('--per-request', type=int, default=32)
    parser.add_argument('--port', type=int, default=18620, help='Redis ports from here; the gateway at +10')
    parser.add_argument('--cores', type=float, default=float(os.cpu_count() or 1), help='for the predictions')
    args = parser.parse_args()
    names = args.configs.split(',')
    work = Path(tempfile.mkdtemp(prefix='judge-work-scaleout-'))
    rows = []
    try:
        for r in range(args.rounds):
            for name in names + names[::-1]:
                row = {'round': r, **run_config(name, args, work)}
                rows.append(row)
                sys.stdout.write(json.dumps(row) + '\n')
                sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.stdout.write(json.dumps({'summary': summary(rows, args.cores)}) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
