"""The capacity model (`toolkit.bench.model`) and process kinds (`toolkit.bench.cpu`), from hand-made profiles
and process snapshots (`bench capacity` on a real stack: tests/integration/toolkit/test_bench.py)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from toolkit.bench import model as capacity
from toolkit.bench.cpu import Proc, cpu_delta, kinds

PROFILE: dict[str, Any] = {
    'cores': 2,
    'topology': {},
    'bare_python_IS_cpu_ms': 12.0,
    'classes': {
        'trivial': {'exec_s': 0.002, 'cpu_ms': {'gateway': 0.5, 'redis': 0.25, 'consumer': 1.0, 'pool': 1.0,
                                                'zygote': 1.0, 'program': 2.0, 'flower': 0.4}},
        'scientific': {'exec_s': 0.05, 'cpu_ms': {'gateway': 1.0, 'redis': 0.5, 'consumer': 2.0, 'pool': 2.0,
                                                  'zygote': 1.0, 'program': 45.0}},
    },
}  # fmt: skip


def test_mix_ceilings_and_size() -> None:
    mixed = capacity.mix_profile(PROFILE, capacity.parse_mix('trivial'))
    assert (mixed['pool_ms'], mixed['total_ms']) == (4.0, 5.75)  # flower is not part of the judging path
    assert capacity.ceilings(mixed) == {'gateway': 2000.0, 'redis': 4000.0, 'consumer': 1000.0, 'pool_core': 250.0}
    sized = capacity.size(mixed, 7000.0, headroom=0.7)
    assert (sized['gateway_processes'], sized['redis_shards'], sized['worker_instances_min']) == (5, 3, 10)
    assert sized['pool_cores'] == 40 and sized['pool_processes'] == 40
    assert sized['worker_instances'] == 10 and sized['cores'] == math.ceil(7000 * 5.75 / 1000 / 0.7)
    half = capacity.mix_profile(PROFILE, capacity.parse_mix('trivial=1,scientific=1'))
    assert half['cpu_ms']['program'] == pytest.approx(23.5) and half['exec_s'] == pytest.approx(0.026)
    # Programs that wait need more processes than cores (Little's law).
    waiting = dict(half, exec_s=1.0)
    assert capacity.size(waiting, 100.0)['pool_processes'] == 100
    with pytest.raises(ValueError):
        capacity.mix_profile(PROFILE, {'compiled': 1.0})
    with pytest.raises(ValueError):
        capacity.parse_mix('trivial=-1')


def test_burst_rate_and_prediction() -> None:
    # 45,000 calls, 0.3 s mean latency, 0.1 s execution: the last answer at ~0.4 s, 112,500/s.
    assert capacity.burst_rate(45000, 0.3, 0.1) == pytest.approx(112500.0)
    with pytest.raises(ValueError, match='cannot be met'):
        capacity.burst_rate(45000, 0.3, 0.4)
    mixed = capacity.mix_profile(PROFILE, {'trivial': 1.0})
    two_cores = capacity.predict(mixed, {'gateway': 1, 'redis': 1, 'consumer': 1, 'pool': 2}, 2)
    assert two_cores['bound'] == 'cores' and two_cores['rate_per_s'] == pytest.approx(2000 / 5.75)
    big = capacity.predict(mixed, {'gateway': 8, 'redis': 1, 'consumer': 2, 'pool': 64}, 64)
    assert big['bound'] == 'consumer' and big['rate_per_s'] == pytest.approx(2000.0)


def test_scaleout_summary_medians_ratios_and_predictions() -> None:
    from scripts.scaleout_bench import summary

    base = {'gateway': 1.0, 'redis': 0.5, 'consumer': 2.0, 'pool': 1.0, 'zygote': 2.0, 'program': 3.5}
    two = dict(base, consumer=2.5)  # two consumers, each less busy, more CPU per task in all
    rows = [
        {'config': 'base', 'subs_per_s': 90.0, 'cpu_ms': base, 'client_cpu_ms': 0.1, 'other_cores': 1.0},
        {'config': 'base', 'subs_per_s': 110.0, 'cpu_ms': base, 'client_cpu_ms': 0.1, 'other_cores': 1.0},
        {'config': 'inst2', 'subs_per_s': 95.0, 'cpu_ms': two, 'client_cpu_ms': 0.1, 'other_cores': 0.5},
    ]
    out = summary(rows, 2.0)
    assert out['medians']['base']['subs_per_s'] == 100.0 and out['medians']['base']['runs'] == 2
    pred = out['predictions']
    # On 2 cores, every configuration is bound by the cores: 2000 / 10 ms from base's profile.
    assert pred['base']['bound'] == 'cores' and pred['base']['predicted_per_s'] == pytest.approx(200.0)
    assert pred['base']['predicted_per_s_stack_cores'] == pytest.approx(100.0)  # 1 core left to the stack
    assert pred['inst2']['predicted_per_s_stack_cores'] == pytest.approx(150.0)
    assert pred['inst2']['ceilings']['consumer'] == pytest.approx(800.0)  # 2 x 1000 / 2.5
    ratio = out['ratios']['inst2/base']
    assert ratio['throughput'] == pytest.approx(0.95) and ratio['cpu_per_sub'] == pytest.approx(10.5 / 10)
    assert ratio['predicted_throughput'] == pytest.approx(1.5)
    assert ratio['ceilings']['consumer'] == pytest.approx(1.6) and ratio['ceilings']['gateway'] == pytest.approx(1.0)
    assert 'gw2/base' not in out['ratios']


def _proc(pid: int, ppid: int, comm: str, cmdline: str, own: float = 0.0, reaped: float = 0.0) -> Proc:
    return Proc(pid, ppid, comm, cmdline, own, reaped)


def test_process_kinds_from_names_and_tree() -> None:
    server = '/opt/rt/bin/python3 -I /x/judge/sandbox/server/main.py {}'
    celery = 'python -m celery -A judge worker -P prefork'
    procs = {
        1: _proc(1, 0, 'init', 'init'),
        10: _proc(10, 1, 'redis-server', 'redis-server 127.0.0.1:1'),
        11: _proc(11, 1, 'judge-gateway', 'python -m api --port 1 --workers 2'),
        12: _proc(12, 11, 'judge-gateway', 'python -c from multiprocessing.spawn import spawn_main'),
        20: _proc(20, 1, 'judge-consumer', celery),
        21: _proc(21, 20, 'judge-pool', celery, 1.0, 0.5),
        22: _proc(22, 21, 'python3', server),
        23: _proc(23, 22, 'python3', server, 0.2, 0.0),
        24: _proc(24, 23, 'python3', server, 0.3, 0.9),
        25: _proc(25, 24, 'python3', server, 0.01),
        30: _proc(30, 1, 'python', 'python -m celery -A judge worker'),  # started elsewhere: not renamed
        31: _proc(31, 30, 'python', 'python -m celery -A judge worker'),
        40: _proc(40, 1, 'python', 'python -m celery -A judge flower'),
    }
    got = kinds(procs, set(procs) - {1})
    assert got == {
        10: 'redis', 11: 'gateway', 12: 'gateway', 20: 'consumer', 21: 'pool', 22: 'slot_server', 23: 'zygote',
        24: 'zygote', 25: 'program', 30: 'consumer', 31: 'pool', 40: 'flower',
    }  # fmt: skip


def test_cpu_delta_counts_reaped_children_as_their_kind() -> None:
    before = {(24, 'own'): ('zygote', 1.0), (24, 'reaped'): ('program', 2.0), (25, 'own'): ('program', 0.1)}
    # 25 exited and was reaped: its 0.1 s (all before the window) moved into 24's reaped time, plus
    # 0.3 s of new children: the window used 0.3 s of program CPU.
    after = {(24, 'own'): ('zygote', 1.2), (24, 'reaped'): ('program', 2.4)}
    used = cpu_delta(before, after)
    assert used == pytest.approx({'zygote': 0.2, 'program': 0.3})


def test_cpu_delta_counts_a_replaced_warm_parent_from_the_first_snapshot_only() -> None:
    # zygote 24 (5 s of its own, 40 s of its children's) is replaced by 26 and reaped by the slot server
    # 22: 22's reaped time grows by 24's whole life, 5.1 + 40.5 s, of which 0.6 s in the window.
    before = {(22, 'own'): ('slot_server', 1.0), (22, 'reaped'): ('zygote', 0.0)}
    before |= {(24, 'own'): ('zygote', 5.0), (24, 'reaped'): ('program', 40.0)}
    after = {(22, 'own'): ('slot_server', 1.1), (22, 'reaped'): ('zygote', 45.6)}
    after |= {(26, 'own'): ('zygote', 0.2), (26, 'reaped'): ('program', 0.7)}
    used = cpu_delta(before, after)
    assert sum(used.values()) == pytest.approx(0.1 + 0.6 + 0.2 + 0.7)
    assert used['slot_server'] == pytest.approx(0.1) and used['program'] == pytest.approx(0.7)
