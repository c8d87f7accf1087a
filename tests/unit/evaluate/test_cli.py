"""`python -m toolkit.evaluate`'s input checks, and a gateway that is down (no stack: tests/integration has
the runs against a real gateway)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from judge.stack import free_port
from tests.support.paths import ROOT
from toolkit.evaluate.cli import main


def _evaluate_math(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, '-m', 'toolkit.evaluate', '--math', *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_evaluate_reports_unreachable_gateway_as_infra_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = tmp_path / 'in.jsonl', tmp_path / 'out.jsonl'
    src.write_text(json.dumps({'type': 'python', 'solution': 'print(1)', 'id': 'x'}) + '\n')
    url = f'http://127.0.0.1:{free_port()}'
    assert main([str(src), '-o', str(out), '--url', url, '--retries', '0', '--json', '--no-progress']) == 1
    assert json.loads(capsys.readouterr().out)['infra_by_reason'] == {'internal_error': 1}
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record['id'] == 'x' and record['reason'] == 'internal_error' and record['error'].startswith('client: ')


@pytest.mark.parametrize(
    'content,message',
    [
        (None, 'cannot read'),
        ('{"type": "python", "solution": "print(1)"}\nnot json\n', 'in.jsonl:2: not JSON'),
        ('[1, 2]\n', 'expected a JSON object'),
        ('{"type": "python"}\n', '"solution"'),
        ('{"solution": "print(1)"}\n', '"type" (a language name'),
        ('\n\n', 'no submissions'),
    ],
)
def test_evaluate_rejects_unusable_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    src = tmp_path / 'in.jsonl'
    if content is not None:
        src.write_text(content)
    assert main([str(src), '-o', str(tmp_path / 'out.jsonl')]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / 'out.jsonl').exists()


def test_evaluate_math_mode_rejects_unusable_input(tmp_path: Path) -> None:
    src = tmp_path / 'in.jsonl'
    src.write_text('{"answer": "1"}\n')
    proc = _evaluate_math(str(src), '-o', str(tmp_path / 'out.jsonl'), '--url', 'http://127.0.0.1:9')
    assert proc.returncode == 2 and "field 'reference'" in proc.stderr
