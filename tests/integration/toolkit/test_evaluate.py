"""`python -m toolkit.evaluate` against the real gateway: results in order and a summary (its input checks:
tests/unit/evaluate/test_cli.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes.services import ROOT

pytestmark = pytest.mark.integration

CASES: list[tuple[dict[str, Any], str]] = [
    ({'type': 'python', 'solution': 'print(input())', 'input': 'hi', 'expected_output': 'hi'}, 'accepted'),
    ({'type': 'python', 'solution': 'print(1)', 'expected_output': '2'}, 'wrong_answer'),
    ({'type': 'python', 'solution': 'raise SystemExit(3)'}, 'runtime_error'),
    ({'type': 'python', 'solution': 'print(sum(range(10)))', 'expected_output': '45'}, 'accepted'),
    ({'type': 'cpp', 'solution': '#include <cstdio>\nint main(){puts("7");}\n', 'expected_output': '7'}, 'accepted'),
    ({'type': 'python', 'solution': 'print(', 'sub_id': 'mine-6'}, 'runtime_error'),
    ({'type': 'python', 'solution': 'print(6)', 'expected_output': '6'}, 'accepted'),
    ({'type': 'cobol', 'solution': 'DISPLAY 7.'}, 'invalid_input'),  # the gateway's 422, isolated
]


def _evaluate(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, '-m', 'toolkit.evaluate', *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)


def _write_input(path: Path) -> None:
    lines = [json.dumps({**sub, 'id': i, 'label': expected}) for i, (sub, expected) in enumerate(CASES)]
    lines.insert(3, '')  # blank lines are skipped
    path.write_text('\n'.join(lines) + '\n')


def test_evaluate_writes_results_in_order_and_a_summary(gateway_url: str, tmp_path: Path) -> None:
    src, out = tmp_path / 'in.jsonl', tmp_path / 'out.jsonl'
    _write_input(src)
    proc = _evaluate(str(src), '-o', str(out), '--url', gateway_url, '--batch-size', '2', '--concurrency', '3')
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r['id'] for r in records] == list(range(len(CASES)))
    for record, (_, expected) in zip(records, CASES, strict=True):
        assert record['verdict'] == expected == record['label'], record
        assert record['success'] is (expected == 'accepted')
        assert 'solution' not in record and ('stdout' in record or expected == 'invalid_input')
    assert records[5]['sub_id'] == 'mine-6'
    assert records[0]['stdout'] == 'hi\n'
    assert f'{len(CASES)}/{len(CASES)}' in proc.stderr  # the progress bar reached the end
    assert f'judged {len(CASES)} submissions' in proc.stdout
    assert 'verdicts: accepted 4, runtime_error 2, wrong_answer 1, invalid_input 1' in proc.stdout
    assert 'pass rate: 50.0% (4/8)' in proc.stdout
    assert 'infra failures: 0' in proc.stdout

    proc = _evaluate(str(src), '-o', str(out), '--url', gateway_url, '--judge', '--json', '--no-progress')
    assert proc.returncode == 0 and proc.stderr == '', proc.stderr
    summary = json.loads(proc.stdout)
    assert summary['total'] == len(CASES) and summary['passed'] == 4 and summary['infra_failures'] == 0
    assert summary['verdicts'] == {'accepted': 4, 'runtime_error': 2, 'wrong_answer': 1, 'invalid_input': 1}
    assert summary['throughput_per_s'] > 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert all('stdout' not in r for r in records)
