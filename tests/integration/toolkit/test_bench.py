"""``python -m toolkit.bench`` against the real gateway, with small N: load scenarios and ``bench capacity``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration


def bench(*args: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, '-m', 'toolkit.bench', *args, '--json'], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def test_longbatch_all_correct(gateway_url: str) -> None:
    [row] = bench('longbatch', '--url', gateway_url, '--n', '24', '--cpu')['scenarios']
    assert (row['scenario'], row['n'], row['wrong']) == ('longbatch', 24, 0)
    assert row['subs_per_s'] > 0 and row['cpu_ms_per_sub_total'] > 0
    assert row['cpu_ms_per_sub_worker'] > 0


def test_latency_all_correct(gateway_url: str) -> None:
    [row] = bench('latency', '--url', gateway_url, '--n', '10', '--warmup', '1')['scenarios']
    assert (row['scenario'], row['wrong']) == ('latency', 0)
    assert 0 < row['p50_ms'] <= row['p90_ms'] <= row['p99_ms'] <= row['max_ms'] < 10_000


def test_toolcalls_all_correct(gateway_url: str) -> None:
    [row] = bench('toolcalls', '--url', gateway_url, '--n', '32')['scenarios']
    assert (row['wrong'], row['n']) == (0, 32)
    assert row['client_cpu_ms_per_call'] > 0


def test_bench_capacity_on_the_real_stack(gateway_url: str, stack: Any, tmp_path: Path) -> None:
    profile_path = tmp_path / 'profile.json'
    root = str(stack.worker.proc.pid)
    cmd = [sys.executable, '-m', 'toolkit.bench', 'capacity', '--url', gateway_url, '--n', '64', '--sci-n', '12',
           '--spawn-n', '4', '--cpu-root', root, '--profile-out', str(profile_path), '--json']  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    [row] = json.loads(out.stdout)['scenarios']
    assert row['wrong'] == 0
    trivial = row['profile']['classes']['trivial']['cpu_ms']
    assert trivial['consumer'] > 0 and trivial['pool'] > 0 and trivial['program'] > 0
    assert trivial['gateway'] == 0 and trivial['redis'] == 0  # --cpu-root: the worker's tree only
    assert row['profile']['bare_python_IS_cpu_ms'] > 0 and row['trivial_total_of_bare_start'] > 0
    assert row['profile']['topology']['pool'] == 2 and row['profile']['topology']['consumer'] == 1
    [sizing] = row['sizing']
    assert sizing['rate_per_s'] > 0 and sizing['worker_instances_min'] >= 1
    # The saved profile is modelled again without a stack, in a Markdown table of three mixes.
    again = [sys.executable, '-m', 'toolkit.bench', 'capacity', '--url', 'http://127.0.0.1:9', '--profile-in',
             str(profile_path), '--rate', '10000', '--markdown']  # fmt: skip
    shown = subprocess.run(again, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    table = [line for line in shown.stdout.splitlines() if line.startswith('| ')]
    assert len(table) == 5 and table[0].startswith('| mix | rate /s | gateway processes | Redis shards'), shown.stdout
