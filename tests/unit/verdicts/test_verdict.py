"""Verdict precedence and upstream's reason for each verdict (`judge.verdict`)."""

from __future__ import annotations

from judge.contracts import ResultReason, Verdict
from judge.verdict import pick, reason_for


def test_verdict_precedence() -> None:
    assert pick(set()) is Verdict.ACCEPTED
    assert pick({Verdict.WRONG_ANSWER, Verdict.TIME_LIMIT, Verdict.OUTPUT_LIMIT}) is Verdict.TIME_LIMIT
    assert pick({Verdict.RUNTIME_ERROR, Verdict.MEMORY_LIMIT}) is Verdict.MEMORY_LIMIT
    assert reason_for(Verdict.TIME_LIMIT) is ResultReason.WORKER_TIMEOUT
    assert reason_for(Verdict.MEMORY_LIMIT) is ResultReason.UNSPECIFIED
    assert reason_for(Verdict.INTERNAL_ERROR).value == 'internal_error'
