"""Judge a JSONL file of submissions offline: ``python -m toolkit.evaluate in.jsonl -o out.jsonl``.

With ``--math``, grade a JSONL file of answers against references instead (`toolkit.evaluate.maths`).

Each input line is a ``Submission`` object (``type``, ``solution``, optional ``input``,
``expected_output``, ``sub_id``); any other field (a dataset's ``id``, ``label``, ...) is copied
into that line's output record, where the result's fields win on a name clash.  Submissions go to
``/run/long-batch`` (``/judge/long-batch`` with ``--judge``) in batches of ``--batch-size``, with up
to ``--concurrency`` batches in flight; 429 answers are retried after their ``Retry-After``, other
retryable failures ``--retries`` times with backoff, and a batch refused as too large (413) or
invalid (422) is split in half until the culprit is alone (it is then reported as ``invalid_input``).

The output has one record per input line, in input order.  A progress bar goes to stderr, a summary
(counts by verdict, pass rate, throughput, infrastructure failures) to stdout (``--json`` for JSON).

Exit status: 0 every submission was judged; 1 some were lost to infrastructure failures
(``queue_timeout``, ``internal_error``, or the gateway unreachable after retries); 2 the input or the
arguments are unusable.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from toolkit.client import DEFAULT_BASE_URL, JudgeClient
from toolkit.errors import JudgeBusy, RequestRejected, ToolkitError
from toolkit.evaluate.jsonl import EvaluationError, read_objects
from toolkit.evaluate.progress import Progress
from toolkit.models import INFRA_REASONS

__all__ = ['EvaluationError', 'Progress', 'evaluate', 'load_submissions', 'main', 'read_objects', 'summarize']

WIRE_FIELDS = ('sub_id', 'type', 'solution', 'input', 'expected_output', 'options')
_MAX_BUSY_RETRIES = 100


def load_submissions(path: Path) -> list[dict[str, Any]]:
    """Read and check every line of ``path`` before anything is sent; blank lines are skipped."""
    rows = read_objects(path)
    for lineno, row in rows:
        if not isinstance(row.get('solution'), str):
            raise EvaluationError(f'{path}:{lineno}: field "solution" (a string) is required')
        if not isinstance(row.get('type'), str) or not row['type']:
            raise EvaluationError(f'{path}:{lineno}: field "type" (a language name, e.g. "python") is required')
    return [row for _, row in rows]


def _client_failure(row: dict[str, Any], message: str) -> dict[str, Any]:
    return {
        'sub_id': row.get('sub_id') or '',
        'success': False,
        'run_success': False,
        'cost': 0.0,
        'reason': 'internal_error',
        'verdict': 'internal_error',
        'error': f'client: {message}',
    }


def _invalid(row: dict[str, Any], message: str) -> dict[str, Any]:
    return {**_client_failure(row, message), 'reason': 'invalid_input', 'verdict': 'invalid_input'}


async def _post(
    client: JudgeClient, path: str, rows: list[dict[str, Any]], timeout_s: float, retries: int
) -> list[dict[str, Any]]:
    """POST one batch with retries; split it on 413/422; never raises (failures become records)."""
    body = {'type': 'batch', 'submissions': [{k: r[k] for k in WIRE_FIELDS if r.get(k) is not None} for r in rows]}
    busy = failures = 0
    while True:
        try:
            answer = await client.request('POST', path, body, timeout_s=timeout_s)
            results = answer.get('results') if isinstance(answer, dict) else None
            if isinstance(results, list) and len(results) == len(rows) and all(isinstance(r, dict) for r in results):
                return results
            message = f'POST {path}: expected {len(rows)} results'
        except JudgeBusy as e:
            busy += 1
            if busy <= _MAX_BUSY_RETRIES:
                await asyncio.sleep(e.retry_after_s if e.retry_after_s is not None else 1.0)
                continue
            message = str(e)
        except RequestRejected as e:
            if e.status in (413, 422) and len(rows) > 1:  # too large, or one bad submission: halve
                half = len(rows) // 2
                first = await _post(client, path, rows[:half], timeout_s, retries)
                return first + await _post(client, path, rows[half:], timeout_s, retries)
            if e.status == 422:
                return [_invalid(rows[0], str(e))]
            return [_client_failure(r, str(e)) for r in rows]
        except ToolkitError as e:
            message = str(e)
        failures += 1
        if failures > retries:
            return [_client_failure(r, message) for r in rows]
        await asyncio.sleep(min(30.0, 0.5 * 2**failures))


async def evaluate(
    rows: list[dict[str, Any]],
    out: TextIO,
    *,
    url: str = DEFAULT_BASE_URL,
    path: str = '/run/long-batch',
    batch_size: int = 64,
    concurrency: int = 4,
    timeout_s: float = 3700.0,
    retries: int = 5,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Judge ``rows`` and write one merged record per row to ``out``, in order; return the results."""
    chunks = [rows[i : i + batch_size] for i in range(0, len(rows), batch_size)]
    done: dict[int, list[dict[str, Any]]] = {}
    results: list[dict[str, Any]] = []
    pending = iter(range(len(chunks)))  # shared by the senders: each takes the next chunk
    written = 0

    async def sender(client: JudgeClient) -> None:
        nonlocal written
        for i in pending:
            done[i] = await _post(client, path, chunks[i], timeout_s, retries)
            if progress is not None:
                progress.advance(len(chunks[i]))
            while written in done:  # write the finished prefix, in input order
                for row, result in zip(chunks[written], done.pop(written), strict=True):
                    extra = {k: v for k, v in row.items() if k not in WIRE_FIELDS}
                    out.write(json.dumps({**extra, **result}, ensure_ascii=False) + '\n')
                    results.append(result)
                written += 1

    async with JudgeClient(url, max_connections=concurrency, timeout_s=timeout_s) as client:
        await asyncio.gather(*(sender(client) for _ in range(min(concurrency, len(chunks)))))
    return results


def summarize(results: list[dict[str, Any]], elapsed_s: float) -> dict[str, Any]:
    """Counts by verdict, pass rate, throughput and infrastructure failures."""
    verdicts = Counter(str(r.get('verdict') or r.get('reason') or 'unknown') for r in results)
    infra = Counter(str(r['reason']) for r in results if r.get('reason') in INFRA_REASONS)
    passed = sum(r.get('success') is True for r in results)
    judged = len(results) - sum(infra.values())
    return {
        'total': len(results),
        'verdicts': dict(verdicts.most_common()),
        'passed': passed,
        'pass_rate': passed / len(results) if results else 0.0,
        'pass_rate_judged': passed / judged if judged else 0.0,
        'infra_failures': sum(infra.values()),
        'infra_by_reason': dict(infra),
        'elapsed_s': round(elapsed_s, 3),
        'throughput_per_s': round(len(results) / elapsed_s, 2) if elapsed_s > 0 else 0.0,
    }


def _print_summary(s: dict[str, Any]) -> None:
    print(f'judged {s["total"]} submissions in {s["elapsed_s"]:.1f} s ({s["throughput_per_s"]:.1f} submissions/s)')
    print('verdicts: ' + ', '.join(f'{v} {n}' for v, n in s['verdicts'].items()))
    print(f'pass rate: {100 * s["pass_rate"]:.1f}% ({s["passed"]}/{s["total"]})', end='')
    print(f'; {100 * s["pass_rate_judged"]:.1f}% of those judged' if s['infra_failures'] else '')
    detail = ', '.join(f'{r} {n}' for r, n in s['infra_by_reason'].items())
    print(f'infra failures: {s["infra_failures"]}' + (f' ({detail})' if detail else ''))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog='python -m toolkit.evaluate', description=__doc__.split('\n\n')[0])
    p.add_argument('input', type=Path, help='JSONL file, one submission per line')
    p.add_argument('-o', '--output', type=Path, required=True, help='JSONL file of results, in input order')
    p.add_argument('--url', default=DEFAULT_BASE_URL, help=f'gateway base URL (default {DEFAULT_BASE_URL})')
    p.add_argument('--batch-size', type=int, default=64, help='submissions per request (default 64)')
    p.add_argument('--concurrency', type=int, default=4, help='requests in flight (default 4)')
    p.add_argument('--judge', action='store_true', help='use /judge/long-batch (no stdout/stderr in the output)')
    p.add_argument('--timeout', type=float, default=3700.0, help='seconds per request (default 3700)')
    p.add_argument('--retries', type=int, default=5, help='retries of a failed request, 429 aside (default 5)')
    p.add_argument('--json', action='store_true', help='print the summary as one JSON object')
    p.add_argument('--no-progress', action='store_true', help='no progress bar on stderr')
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m toolkit.evaluate``; returns the exit status."""
    if '--math' in (sys.argv[1:] if argv is None else argv):  # answers against references
        from toolkit.evaluate.maths import main as math_main

        return math_main(argv)
    args = _parser().parse_args(argv)
    if args.batch_size < 1 or args.concurrency < 1:
        print('error: --batch-size and --concurrency must be >= 1', file=sys.stderr)
        return 2
    try:
        rows = load_submissions(args.input)
    except EvaluationError as e:
        print(f'error: {e}', file=sys.stderr)
        return 2
    progress = Progress(len(rows), sys.stderr, enabled=not args.no_progress)
    started = time.monotonic()
    try:
        with args.output.open('w', encoding='utf-8') as out:
            results = asyncio.run(
                evaluate(
                    rows,
                    out,
                    url=args.url,
                    path='/judge/long-batch' if args.judge else '/run/long-batch',
                    batch_size=args.batch_size,
                    concurrency=args.concurrency,
                    timeout_s=args.timeout,
                    retries=args.retries,
                    progress=progress,
                )
            )
    except OSError as e:
        print(f'error: {args.output}: {e}', file=sys.stderr)
        return 2
    finally:
        progress.close()
    summary = summarize(results, time.monotonic() - started)
    if args.json:
        print(json.dumps(summary))
    else:
        _print_summary(summary)
    return 1 if summary['infra_failures'] else 0
