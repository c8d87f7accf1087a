"""Judge-side math reward (toolkit.rewards.answers, evaluate --math) through the real stack, and the math bench's own
answers checked in the submission runtime (the grader's output parsing: tests/unit/evaluate/test_mathreward.py)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from judge.runtime import submission_python
from judge.settings import Settings
from tests.support.processes.services import ROOT
from tests.support.processes.stack import Stack
from toolkit.bench.mathcalls import math_case
from toolkit.rewards.answers import math_scores

PAIRS = [
    ('so the answer is \\boxed{\\frac{1}{2}}', '0.5'),
    ('x = 3', '4'),
    ('$\\sqrt{2}$', '\\sqrt{2}'),
    ('The total is \\boxed{2\\pi}.', '$2\\pi$'),
    ('\\boxed{\\{1, 2\\}}', '\\{2, 1\\}'),
    ('\\boxed{x^2+2x+1}', '(x+1)^2'),
]
EXPECTED = [1.0, 0.0, 1.0, 1.0, 1.0, 1.0]


def test_the_bench_answers_are_right_in_the_runtime(tmp_path: Path) -> None:
    """The math bench checks the judge against answers it computes without sympy: check those here."""
    cases = [math_case(i) for i in range(60)]
    driver = tmp_path / 'driver.py'
    driver.write_text(
        'import contextlib, io, json, sys\n'
        'out = []\n'
        'for src in json.load(sys.stdin):\n'
        '    buf = io.StringIO()\n'
        '    with contextlib.redirect_stdout(buf):\n'
        '        exec(compile(src, "case", "exec"), {"__name__": "__main__"})\n'
        '    out.append(buf.getvalue().strip())\n'
        'print(json.dumps(out))\n'
    )
    python = submission_python(Settings())
    proc = subprocess.run(
        [python, '-I', str(driver)], input=json.dumps([src for src, _ in cases]), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [want for _, want in cases]
    assert len({src for src, _ in cases}) == len(cases), 'every call has its own parameters'


@pytest.mark.integration
def test_math_verify_grades_inside_the_sandbox(stack: Stack) -> None:
    scores = asyncio.run(math_scores(PAIRS, base_url=stack.url, pack=4))
    assert [s.score for s in scores] == EXPECTED, scores
    assert all(s.reliable and s.runtime for s in scores)


@pytest.mark.integration
def test_an_operator_scorer_plugs_in_and_hostile_answers_cost_only_their_own_score(stack: Stack) -> None:
    pairs = [('7', '7'), ('HANG', '1'), ('8', '7'), ('RAISE', '1'), (' 9 ', '9')]
    scores = asyncio.run(math_scores(pairs, base_url=stack.url, scorer='hostile_scorer:compute_score', pack=5))
    assert [s.score for s in scores] == [1.0, 0.0, 0.0, 0.0, 1.0], scores
    assert scores[1].error == 'time_limit' and not scores[1].infra
    assert scores[3].error == 'ValueError'
    assert all(s.reliable for s in scores)


@pytest.mark.integration
def test_a_scorer_that_cannot_load_is_an_infrastructure_failure_never_a_score(stack: Stack) -> None:
    scores = asyncio.run(math_scores(PAIRS[:3], base_url=stack.url, scorer='no_such_module:compute_score'))
    assert all(s.infra and s.score is None and not s.correct for s in scores), scores
    assert 'ModuleNotFoundError' in (scores[0].error or '')


def _evaluate(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, '-m', 'toolkit.evaluate', '--math', *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.integration
def test_evaluate_math_mode_writes_scores_in_order_with_a_summary(stack: Stack, tmp_path: Path) -> None:
    src, out = tmp_path / 'in.jsonl', tmp_path / 'out.jsonl'
    lines = [json.dumps({'id': i, 'response': a, 'gold': r}) for i, (a, r) in enumerate(PAIRS)]
    src.write_text('\n'.join(lines) + '\n')
    common = ('-o', str(out), '--url', stack.url, '--answer-field', 'response', '--reference-field', 'gold')
    proc = _evaluate(str(src), *common, '--pack', '2', '--json')
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r['id'] for r in records] == list(range(len(PAIRS)))
    assert [r['score'] for r in records] == EXPECTED
    summary = json.loads(proc.stdout)
    assert summary['correct'] == 5 and summary['graded'] == 6 and summary['infra_failures'] == 0
    assert '6/6' in proc.stderr, 'the progress bar went to stderr'
    proc = _evaluate(str(src), *common, '--scorer', 'boxed_scorer:compute_score')
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)['score'] for line in out.read_text().splitlines()] == [1.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    assert 'accuracy: 50.0% (3/6 graded)' in proc.stdout
    proc = _evaluate(str(src), *common, '--scorer', 'missing_module:f')
    assert proc.returncode == 1 and 'infra failures: 6' in proc.stdout
    assert all(json.loads(line)['infra'] for line in out.read_text().splitlines())
