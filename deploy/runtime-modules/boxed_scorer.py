"""An example operator scorer, importable by submissions from the runtime's modules directory.

Build the runtime with ``JUDGE_RUNTIME_MODULES=deploy/runtime-modules`` and grade with
``python -m toolkit.evaluate --math in.jsonl -o out.jsonl --scorer boxed_scorer:compute_score``.
A scorer is ``compute_score(answer, reference) -> float``; it runs inside the sandbox, under the
judge's limits.  This one needs only the standard library (so it costs no sympy import): the last
``\\boxed{...}`` of the answer (or the whole answer) against the reference, as exact fractions when
both read as numbers, else as text with spaces and ``$`` removed.
"""

from __future__ import annotations

from fractions import Fraction


def last_boxed(text: str) -> str | None:
    """The contents of the last ``\\boxed{...}`` in ``text`` (braces balanced), or None."""
    start = text.rfind('\\boxed{')
    if start < 0:
        return None
    depth, i = 0, start + len('\\boxed')
    for j in range(i, len(text)):
        if text[j] == '{':
            depth += 1
        elif text[j] == '}':
            depth -= 1
            if depth == 0:
                return text[i + 1 : j]
    return None


def _normal(text: str) -> str:
    return ''.join(text.replace('$', '').split())


def _number(text: str) -> Fraction | None:
    text = text.replace('\\frac{', '').replace('}{', '/').rstrip('}') if text.startswith('\\frac{') else text
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def compute_score(answer: str, reference: str) -> float:
    """1.0 when the answer's final value equals the reference, else 0.0."""
    got = _normal(last_boxed(answer) or answer)
    want = _normal(reference)
    a, b = _number(got), _number(want)
    if a is not None and b is not None:
        return 1.0 if a == b else 0.0
    return 1.0 if got == want else 0.0
