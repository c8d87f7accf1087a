"""``python -m toolkit.bench`` against the real gateway, with small N."""

from __future__ import annotations

import json
import subprocess
import sys
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
