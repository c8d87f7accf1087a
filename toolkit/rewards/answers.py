"""Judge-side math reward: grade final answers against references inside the sandbox.

Parsing LaTeX written by a model is untrusted work (it can hang the parser or eat memory), so it
runs as a program sent to the judge, under the judge's limits, in the node's submission runtime:
by default math-verify (``parse`` the reference and the answer, then ``verify``), or an operator's
scorer, ``'module:function'`` with ``function(answer, reference) -> float``, from the runtime's
operator modules (``JUDGE_RUNTIME_MODULES``).

Pairs are packed ``pack`` to a program (one import of the scorer for several answers) and go
through a `RequestProcessor` (``/run/long-batch``), so large reward batches are grouped and
retried like any other submission.  When a packed program hits a limit, the answers it finished
keep their scores, the one it was grading is graded alone, and the rest are packed again: one
hostile answer costs only its own score (0.0, with the limit as ``error``).  An infrastructure
failure (the judge, the network, or a scorer that cannot be loaded on the node) is flagged
``infra`` and never scored.

Usage::

    scores = await math_scores([('... so the answer is \\\\boxed{1/2}', '0.5')], base_url=URL)
    reward = scores[0].score  # 1.0; None when scores[0].infra
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Sequence

from toolkit.batcher import RequestProcessor
from toolkit.client import DEFAULT_BASE_URL
from toolkit.errors import ToolkitError
from toolkit.models import Submission
from toolkit.policy import BatchPolicy

__all__ = ['DEFAULT_SCORER', 'MATH_POLICY', 'MathScore', 'grader_source', 'math_scores']

DEFAULT_SCORER = 'math_verify'
"""math-verify's ``verify(parse(reference), parse(answer))``; a reference without ``$`` or
``\\boxed`` is read as ``\\boxed{reference}``."""
MATH_POLICY = BatchPolicy(max_batch_size=32, fill_wait_ms=2.0, max_batches_in_flight=8, route='/run/long-batch')
"""Default batching of grading programs (their output carries the scores, so ``/run``)."""
_LIMIT_VERDICTS = frozenset({'time_limit', 'memory_limit', 'output_limit', 'runtime_error'})

_GRADER = """\
import json, sys
out, sys.stdout = sys.stdout, sys.stderr  # whatever the scorer prints stays out of the scores
SPEC, TIMEOUT_S = {spec!r}, {timeout_s!r}
if SPEC == 'math_verify':
    from math_verify import parse, verify

    def score(answer, reference):
        if '$' not in reference and '\\\\boxed' not in reference:
            reference = '\\\\boxed{{' + reference + '}}'
        gold = parse(reference, parsing_timeout=TIMEOUT_S)
        pred = parse(answer, parsing_timeout=TIMEOUT_S)
        return 1.0 if gold and pred and verify(gold, pred, timeout_seconds=TIMEOUT_S) else 0.0
else:
    import importlib
    module, _, name = SPEC.partition(':')
    score = getattr(importlib.import_module(module), name or 'compute_score')
pairs = json.loads(sys.stdin.read())
print('ready', file=out, flush=True)
for i, (answer, reference) in enumerate(pairs):
    try:
        line = f'{{i}} {{float(score(answer, reference))!r}}'
    except Exception as exc:
        line = f'{{i}} ! {{type(exc).__name__}}'
    print(line, file=out, flush=True)
"""


@dataclasses.dataclass(frozen=True)
class MathScore:
    """The grade of one answer: ``score`` (None when it could not be graded: ``infra``)."""

    score: float | None
    infra: bool = False
    error: str | None = None
    """Why the score is 0 or missing: a limit (``time_limit``...), the scorer's exception, or the failure."""
    runtime: str | None = None
    """Digest of the submission runtime that graded it."""

    @property
    def correct(self) -> bool:
        """Full marks (``score >= 1``)."""
        return self.score is not None and self.score >= 1.0

    @property
    def reliable(self) -> bool:
        """False for an infrastructure failure: mask the sample, do not train on it."""
        return not self.infra


def grader_source(scorer: str = DEFAULT_SCORER, timeout_s: int = 3) -> str:
    """The program that grades a JSON list of ``[answer, reference]`` pairs read from stdin."""
    module, _, name = scorer.partition(':')
    if not (all(part.isidentifier() for part in module.split('.')) and (not name or name.isidentifier())):
        raise ValueError(f"scorer must be 'math_verify' or 'module:function', got {scorer!r}")
    return _GRADER.format(spec=scorer, timeout_s=int(timeout_s))


def _parse_lines(stdout: str, n: int) -> tuple[bool, dict[int, tuple[float, str | None]]]:
    """(whether the scorer loaded, {index: (score, error)}) from a grading program's output."""
    lines = stdout.splitlines()
    ready = bool(lines) and lines[0] == 'ready'
    graded: dict[int, tuple[float, str | None]] = {}
    for line in lines[1:] if ready else []:
        parts = line.split(' ', 2)
        if len(parts) < 2 or not parts[0].isdigit() or int(parts[0]) >= n:
            continue
        if parts[1] == '!':
            graded[int(parts[0])] = (0.0, parts[2] if len(parts) > 2 else 'error')
            continue
        try:
            graded[int(parts[0])] = (float(parts[1]), None)
        except ValueError:
            continue
    return ready, graded


class _Grader:
    def __init__(self, processor: RequestProcessor, source: str, deadline_s: float | None) -> None:
        self.processor, self.source, self.deadline_s = processor, source, deadline_s

    async def grade(self, items: list[tuple[int, str, str]]) -> dict[int, MathScore]:
        """Scores of ``items`` ((index, answer, reference)), splitting the pack when it fails."""
        stdin = json.dumps([[answer, reference] for _, answer, reference in items], ensure_ascii=False)
        try:
            res = await self.processor.submit(Submission(self.source, input=stdin), deadline_s=self.deadline_s)
        except ToolkitError as e:
            return {i: MathScore(None, infra=True, error=f'{type(e).__name__}: {e}') for i, _, _ in items}
        if res.infra:
            return {
                i: MathScore(None, infra=True, error=res.error or res.reason, runtime=res.runtime) for i, _, _ in items
            }
        ready, graded = _parse_lines(res.stdout or '', len(items))
        if not ready:  # the scorer did not load: the node's runtime, not the answer
            detail = (res.stderr or '').strip().splitlines()[-1:] or [res.verdict or 'no output']
            error = f'the scorer could not be loaded: {detail[0]}'
            return {i: MathScore(None, infra=True, error=error, runtime=res.runtime) for i, _, _ in items}
        out = {items[k][0]: MathScore(s, error=e, runtime=res.runtime) for k, (s, e) in graded.items()}
        missing = [item for k, item in enumerate(items) if k not in graded]
        if not missing:
            return out
        if len(items) == 1:  # the answer itself ran the grader into a limit: no credit
            out[items[0][0]] = MathScore(0.0, error=res.verdict or 'no score', runtime=res.runtime)
            return out
        if res.verdict in _LIMIT_VERDICTS:  # the first unfinished answer is the suspect: alone
            parts = [missing[:1], missing[1:]] if len(missing) > 1 else [missing]
        else:  # finished without every line (output cut): in halves
            parts = [missing[: len(missing) // 2], missing[len(missing) // 2 :]] if len(missing) > 1 else [missing]
        for graded_part in await asyncio.gather(*(self.grade(part) for part in parts if part)):
            out.update(graded_part)
        return out


async def math_scores(
    pairs: Sequence[tuple[str, str]],
    *,
    processor: RequestProcessor | None = None,
    base_url: str = DEFAULT_BASE_URL,
    scorer: str = DEFAULT_SCORER,
    pack: int = 8,
    timeout_s: int = 3,
    deadline_s: float | None = None,
) -> list[MathScore]:
    """Grade each ``(answer, reference)`` pair in the judge's sandbox; scores in input order.

    :param processor: a processor to reuse (route ``/run/long-batch`` or ``/run/batch``); by default
        a temporary one with `MATH_POLICY` is made and closed.
    :param scorer: ``'math_verify'`` or ``'module:function'`` from the runtime's operator modules.
    :param pack: pairs graded by one program.
    :param timeout_s: math-verify's own timeout for each parse and comparison (whole seconds).
    :param deadline_s: per-program deadline (default: the processor policy's).
    """
    if pack < 1:
        raise ValueError('pack must be >= 1')
    source = grader_source(scorer, timeout_s)
    items = [(i, str(answer), str(reference)) for i, (answer, reference) in enumerate(pairs)]
    packs = [items[i : i + pack] for i in range(0, len(items), pack)]

    async def run(proc: RequestProcessor) -> list[MathScore]:
        grader = _Grader(proc, source, deadline_s)
        scores: dict[int, MathScore] = {}
        for part in await asyncio.gather(*(grader.grade(p) for p in packs)):
            scores.update(part)
        return [scores[i] for i in range(len(items))]

    if processor is not None:
        return await run(processor)
    async with RequestProcessor(base_url, MATH_POLICY) as proc:
        return await run(proc)
