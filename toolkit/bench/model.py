"""The capacity model: from measured CPU per submission by process kind to ceilings and a cluster size.

A *profile* is what ``python -m toolkit.bench capacity`` measured on a stack (`toolkit.bench.capacity`):
for each program class (``trivial``, ``scientific``) the CPU milliseconds per submission of every
process kind (`toolkit.bench.cpu.KINDS`) and the mean execution time, plus a bare ``python3 -I -S`` start.

The model (pure arithmetic, no I/O):

* three kinds are **serial**, one core each at most: a gateway process, a Redis (one broker shard),
  a worker instance's consumer; each tops out at 1000 / (its ms per submission) submissions/s;
* the **pool** (pool processes, slot servers, zygotes, programs) scales with cores: one core serves
  1000 / (their ms per submission) submissions/s;
* for a target rate and program mix, each serial kind needs rate x ms / 1000 / headroom instances
  (rounded up), the pool that many cores, and the whole cluster the sum of every kind's CPU;
* a burst of B calls sent at once, answered with a mean latency W, is served at about
  B / (2 (W - e)) submissions/s, e being one execution's own mean time (the last answer comes at
  about twice the mean wait);
* `predict` inverts it: the rate a given topology reaches, and which part limits it.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ['POOL_KINDS', 'SERIAL_KINDS', 'burst_rate', 'ceilings', 'mix_profile', 'parse_mix', 'predict', 'size']

SERIAL_KINDS = {'gateway': 'gateway processes', 'redis': 'Redis shards', 'consumer': 'worker instances'}
POOL_KINDS = ('pool', 'slot_server', 'zygote', 'program')
PROCESSES_PER_INSTANCE = 4
"""deploy/worker.sh's default rule (one worker instance per 4 pool processes)."""

Profile = dict[str, Any]


def parse_mix(text: str) -> dict[str, float]:
    """``trivial=0.7,scientific=0.3`` → shares summing to 1 (a lone name means all of it)."""
    shares: dict[str, float] = {}
    for part in (p.strip() for p in text.split(',') if p.strip()):
        name, _, value = part.partition('=')
        shares[name.strip()] = float(value) if value else 1.0
    total = sum(shares.values())
    if total <= 0 or any(v < 0 for v in shares.values()):
        raise ValueError(f'a mix needs non-negative shares with a positive sum: {text!r}')
    return {name: v / total for name, v in shares.items()}


def mix_profile(profile: Profile, mix: dict[str, float]) -> dict[str, Any]:
    """CPU ms per submission by kind and mean execution time for ``mix`` of the profile's classes."""
    classes = profile['classes']
    unknown = set(mix) - set(classes)
    if unknown:
        raise ValueError(f'the profile has no class {sorted(unknown)} (it has {sorted(classes)})')
    cpu: dict[str, float] = {}
    exec_s = 0.0
    for name, share in mix.items():
        for kind, ms in classes[name]['cpu_ms'].items():
            cpu[kind] = cpu.get(kind, 0.0) + share * ms
        exec_s += share * classes[name]['exec_s']
    pool = sum(cpu.get(k, 0.0) for k in POOL_KINDS)
    total = sum(cpu.get(k, 0.0) for k in (*SERIAL_KINDS, *POOL_KINDS))
    return {'cpu_ms': cpu, 'pool_ms': pool, 'total_ms': total, 'exec_s': exec_s}


def ceilings(mixed: dict[str, Any]) -> dict[str, float]:
    """Submissions/s one of each serial kind can carry, and one core of pool."""
    out = {kind: 1000.0 / mixed['cpu_ms'][kind] for kind in SERIAL_KINDS if mixed['cpu_ms'].get(kind, 0.0) > 0}
    if mixed['pool_ms'] > 0:
        out['pool_core'] = 1000.0 / mixed['pool_ms']
    return out


def burst_rate(calls: int, mean_latency_s: float, exec_s: float) -> float:
    """The steady rate that answers ``calls`` sent at once with mean latency ``mean_latency_s``."""
    wait_s = mean_latency_s - exec_s
    if wait_s <= 0:
        raise ValueError(
            f'one execution alone takes {exec_s * 1000:.0f} ms on average: a mean latency of '
            f'{mean_latency_s * 1000:.0f} ms cannot be met at any size'
        )
    return calls / (2 * wait_s)


def size(mixed: dict[str, Any], rate: float, headroom: float = 0.7) -> dict[str, Any]:
    """How many of each part carry ``rate`` submissions/s with every part at most ``headroom`` busy."""
    if not 0 < headroom <= 1:
        raise ValueError('headroom is a fraction of a core: 0 < headroom <= 1')
    need = {kind: max(1, math.ceil(rate * mixed['cpu_ms'].get(kind, 0.0) / 1000 / headroom)) for kind in SERIAL_KINDS}
    pool_cores = max(1, math.ceil(rate * mixed['pool_ms'] / 1000 / headroom))
    # One pool process per core while programs use the CPU; more when they wait (Little's law).
    pool_processes = max(pool_cores, math.ceil(rate * mixed['exec_s']))
    instances = max(need['consumer'], math.ceil(pool_processes / PROCESSES_PER_INSTANCE))
    return {
        'rate_per_s': rate,
        'gateway_processes': need['gateway'],
        'redis_shards': need['redis'],
        'worker_instances_min': need['consumer'],
        'worker_instances': instances,
        'pool_processes': pool_processes,
        'pool_cores': pool_cores,
        'cores': math.ceil(rate * mixed['total_ms'] / 1000 / headroom),
    }


def predict(mixed: dict[str, Any], topology: dict[str, int], cores: float) -> dict[str, Any]:
    """The rate ``topology`` (count of each serial kind, ``pool`` processes) reaches on ``cores``
    cores, and the part that limits it: the lowest of each serial kind's ceiling times its count,
    the pool processes' and the cores' (every process shares them)."""
    limits: dict[str, float] = {}
    for kind in SERIAL_KINDS:
        ms = mixed['cpu_ms'].get(kind, 0.0)
        if ms > 0 and topology.get(kind):
            limits[kind] = topology[kind] * 1000.0 / ms
    if mixed['pool_ms'] > 0 and topology.get('pool'):
        limits['pool'] = topology['pool'] * 1000.0 / max(mixed['pool_ms'], mixed['exec_s'] * 1000)
    if mixed['total_ms'] > 0:
        limits['cores'] = cores * 1000.0 / mixed['total_ms']
    bound = min(limits, key=lambda k: limits[k])
    return {'rate_per_s': limits[bound], 'bound': bound, 'limits': limits}
