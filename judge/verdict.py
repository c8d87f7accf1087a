"""Verdict precedence and the upstream `reason`/flags derived from a verdict.

One execution can hit several limits at once (it printed too much *and* ran out of time); the
first matching verdict in `ORDER` wins, so the answer is always well defined.
"""

from __future__ import annotations

from judge.contracts import ResultReason, Verdict

ORDER: tuple[Verdict, ...] = (
    Verdict.INTERNAL_ERROR,
    Verdict.QUEUE_TIMEOUT,
    Verdict.COMPILE_ERROR,
    Verdict.TIME_LIMIT,
    Verdict.MEMORY_LIMIT,
    Verdict.OUTPUT_LIMIT,
    Verdict.RUNTIME_ERROR,
    Verdict.WRONG_ANSWER,
    Verdict.ACCEPTED,
)


def pick(verdicts: set[Verdict]) -> Verdict:
    """The verdict that wins among ``verdicts`` (accepted when empty)."""
    for verdict in ORDER:
        if verdict in verdicts:
            return verdict
    return Verdict.ACCEPTED


def reason_for(verdict: Verdict) -> ResultReason:
    """Upstream's `reason` for a verdict: only time limits and infrastructure failures have one."""
    if verdict is Verdict.TIME_LIMIT:
        return ResultReason.WORKER_TIMEOUT
    if verdict is Verdict.INTERNAL_ERROR:
        return ResultReason.INTERNAL_ERROR
    if verdict is Verdict.QUEUE_TIMEOUT:
        return ResultReason.QUEUE_TIMEOUT
    return ResultReason.UNSPECIFIED
