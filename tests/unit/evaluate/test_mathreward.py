"""The math reward's client side (`toolkit.rewards.answers`, `toolkit.evaluate.maths`): the grader's output, scorer
names and the summary (grading inside the sandbox: tests/integration/toolkit/test_answers.py)."""

from __future__ import annotations

import pytest

from toolkit.evaluate.maths import summarize_scores
from toolkit.rewards.answers import MathScore, _parse_lines, grader_source


def test_grader_output_parsing_and_scorer_names() -> None:
    assert _parse_lines('ready\n0 1.0\n2 ! ValueError\njunk\n7 1.0\n', 3) == (
        True,
        {0: (1.0, None), 2: (0.0, 'ValueError')},
    )
    assert _parse_lines('Traceback ...\n0 1.0', 1) == (False, {})
    assert 'my_scorers' in grader_source('my_scorers.sub:compute_score')
    for bad in ('os; import shutil', 'a:b:c', '', 'x y'):
        with pytest.raises(ValueError):
            grader_source(bad)
    scores = [MathScore(1.0), MathScore(0.0, error='time_limit'), MathScore(None, infra=True, error='internal_error')]
    summary = summarize_scores(scores, 1.0)
    assert (summary['graded'], summary['correct'], summary['infra_failures']) == (2, 1, 1)
    assert summary['accuracy'] == 0.5 and summary['errors'] == {'time_limit': 1, 'internal_error': 1}
