"""``python -m toolkit.bench`` without a gateway: every call of a scenario is counted as wrong."""

from __future__ import annotations

import json
import subprocess
import sys


def test_bench_exits_non_zero_when_gateway_is_down() -> None:
    out = subprocess.run(
        [sys.executable, '-m', 'toolkit.bench', 'longbatch', '--url', 'http://127.0.0.1:9', '--n', '2', '--json'],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1
    assert json.loads(out.stdout)['scenarios'][0]['wrong'] == 2
