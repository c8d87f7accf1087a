"""Reading the JSONL input files of the offline evaluators (`toolkit.evaluate`, `toolkit.evaluate.maths`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolkit.errors import ToolkitError

__all__ = ['EvaluationError', 'read_objects']


class EvaluationError(ToolkitError):
    """The input file cannot be used (missing, not JSONL, not submissions)."""


def read_objects(path: Path, what: str = 'submissions') -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) of every non-blank line of the JSONL file ``path``; `EvaluationError`
    when it is unreadable, a line is not a JSON object, or there is none."""
    try:
        text = path.read_text(encoding='utf-8')
    except (OSError, UnicodeDecodeError) as e:
        raise EvaluationError(f'{path}: cannot read: {e}') from e
    rows: list[tuple[int, dict[str, Any]]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            raise EvaluationError(f'{path}:{lineno}: not JSON: {e}') from e
        if not isinstance(row, dict):
            raise EvaluationError(f'{path}:{lineno}: expected a JSON object, got {type(row).__name__}')
        rows.append((lineno, row))
    if not rows:
        raise EvaluationError(f'{path}: no {what}')
    return rows
