"""Math mode of ``python -m toolkit.evaluate``: grade a JSONL file of answers against references.

``python -m toolkit.evaluate --math in.jsonl -o out.jsonl [--scorer module:function]``

Each input line is a JSON object with the model's answer (``--answer-field``, default ``answer``)
and the reference (``--reference-field``, default ``reference``); every other field is copied to the
output line, which adds ``score``, ``correct``, ``infra``, ``error`` and ``runtime``.  Grading runs in
the judge's sandbox (`toolkit.rewards.answers`); a progress bar goes to stderr and the summary (accuracy
over the graded answers and over all, infrastructure failures) to stdout.

Exit status: 0 every answer was graded; 1 some were lost to infrastructure failures (flagged
``infra``, never scored); 2 the input or the arguments are unusable.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from toolkit.batcher import RequestProcessor
from toolkit.client import DEFAULT_BASE_URL
from toolkit.evaluate.jsonl import EvaluationError, read_objects
from toolkit.evaluate.progress import Progress
from toolkit.rewards.answers import DEFAULT_SCORER, MATH_POLICY, MathScore, math_scores

__all__ = ['load_pairs', 'main', 'summarize_scores']

_CHUNK = 64


def load_pairs(path: Path, answer_field: str, reference_field: str) -> list[dict[str, Any]]:
    """Read and check every line of ``path`` before anything is sent; blank lines are skipped."""
    rows = read_objects(path, 'answers')
    for lineno, row in rows:
        for name in (answer_field, reference_field):
            if not isinstance(row.get(name), str | int | float) or isinstance(row.get(name), bool):
                raise EvaluationError(f'{path}:{lineno}: field {name!r} (a string or a number) is required')
    return [row for _, row in rows]


def summarize_scores(scores: list[MathScore], elapsed_s: float) -> dict[str, Any]:
    """Accuracy over graded answers and over all, infrastructure failures, errors by kind."""
    graded = [s for s in scores if not s.infra]
    correct = sum(s.correct for s in graded)
    return {
        'total': len(scores),
        'graded': len(graded),
        'correct': correct,
        'accuracy': correct / len(graded) if graded else 0.0,
        'accuracy_all': correct / len(scores) if scores else 0.0,
        'mean_score': sum(s.score or 0.0 for s in graded) / len(graded) if graded else 0.0,
        'infra_failures': len(scores) - len(graded),
        'errors': dict(Counter(s.error.split(':')[0] for s in scores if s.error).most_common()),
        'runtimes': sorted({s.runtime for s in scores if s.runtime}),
        'elapsed_s': round(elapsed_s, 3),
        'throughput_per_s': round(len(scores) / elapsed_s, 2) if elapsed_s > 0 else 0.0,
    }


async def grade_rows(
    rows: list[dict[str, Any]], args: argparse.Namespace, progress: Progress | None = None
) -> list[MathScore]:
    """Scores of ``rows`` in order, ``_CHUNK`` pairs per call, all chunks in flight at once."""
    pairs = [(str(r[args.answer_field]), str(r[args.reference_field])) for r in rows]
    chunks = [pairs[i : i + _CHUNK] for i in range(0, len(pairs), _CHUNK)]
    policy = dataclasses.replace(MATH_POLICY, max_batches_in_flight=args.concurrency)
    async with RequestProcessor(args.url, policy) as proc:

        async def one(chunk: list[tuple[str, str]]) -> list[MathScore]:
            scores = await math_scores(
                chunk, processor=proc, scorer=args.scorer, pack=args.pack, timeout_s=args.timeout
            )
            if progress is not None:
                progress.advance(len(chunk))
            return scores

        parts = await asyncio.gather(*(one(c) for c in chunks))
    return [s for part in parts for s in part]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog='python -m toolkit.evaluate --math', description=__doc__.split('\n\n')[0])
    p.add_argument('--math', action='store_true', help='this mode (answers against references)')
    p.add_argument('input', type=Path, help='JSONL file, one answer and its reference per line')
    p.add_argument('-o', '--output', type=Path, required=True, help='JSONL file of scores, in input order')
    p.add_argument('--url', default=DEFAULT_BASE_URL, help=f'gateway base URL (default {DEFAULT_BASE_URL})')
    p.add_argument('--answer-field', default='answer', help='field of the model answer (default answer)')
    p.add_argument('--reference-field', default='reference', help='field of the reference (default reference)')
    p.add_argument('--scorer', default=DEFAULT_SCORER, help="'math_verify' (default) or module:function")
    p.add_argument('--pack', type=int, default=8, help='answers graded by one program (default 8)')
    p.add_argument('--timeout', type=int, default=3, help="math-verify's own timeout per step, s (default 3)")
    p.add_argument('--concurrency', type=int, default=8, help='requests in flight (default 8)')
    p.add_argument('--json', action='store_true', help='print the summary as one JSON object')
    p.add_argument('--no-progress', action='store_true', help='no progress bar on stderr')
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m toolkit.evaluate --math``; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.pack < 1 or args.concurrency < 1 or args.timeout < 1:
        print('error: --pack, --concurrency and --timeout must be >= 1', file=sys.stderr)
        return 2
    try:
        rows = load_pairs(args.input, args.answer_field, args.reference_field)
    except EvaluationError as e:
        print(f'error: {e}', file=sys.stderr)
        return 2
    progress = Progress(len(rows), sys.stderr, enabled=not args.no_progress)
    started = time.monotonic()
    try:
        scores = asyncio.run(grade_rows(rows, args, progress))
    except ValueError as e:  # a malformed --scorer
        print(f'error: {e}', file=sys.stderr)
        return 2
    finally:
        progress.close()
    try:
        with args.output.open('w', encoding='utf-8') as out:
            for row, s in zip(rows, scores, strict=True):
                record = {**row, 'score': s.score, 'correct': s.correct, 'infra': s.infra, 'error': s.error}
                out.write(json.dumps(record | {'runtime': s.runtime}, ensure_ascii=False) + '\n')
    except OSError as e:
        print(f'error: {args.output}: {e}', file=sys.stderr)
        return 2
    summary = summarize_scores(scores, time.monotonic() - started)
    if args.json:
        print(json.dumps(summary))
    else:
        print(f'graded {summary["total"]} answers in {summary["elapsed_s"]:.1f} s ({summary["throughput_per_s"]} /s)')
        print(f'accuracy: {100 * summary["accuracy"]:.1f}% ({summary["correct"]}/{summary["graded"]} graded)', end='')
        print(f'; {100 * summary["accuracy_all"]:.1f}% of all {summary["total"]}')
        print(f'infra failures: {summary["infra_failures"]}; errors: {summary["errors"] or "none"}')
        print(f'runtime: {", ".join(summary["runtimes"]) or "unknown"}')
    return 1 if summary['infra_failures'] else 0
