"""Judge-side rewards: run many (solution, tests) pairs in batches and return pass rates.

Each (solution, test) becomes one submission with ``expected_output`` sent to ``/judge/long-batch``
through a ``RequestProcessor``, so large reward batches are grouped, retried on infrastructure
failures and bounded by a deadline.  A test that got no real verdict counts as failed *and* is
counted in ``infra_errors`` so the trainer can drop or mask that sample instead of learning from it.

Usage::

    rates = await pass_rates([(code, [TestCase('1 2\\n', '3')])], base_url='http://127.0.0.1:8088')
    reward = rates[0].rate
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from toolkit.batcher import RequestProcessor
from toolkit.client import DEFAULT_BASE_URL
from toolkit.errors import ToolkitError
from toolkit.models import Language, Result, Submission
from toolkit.policy import BatchPolicy
from toolkit.sync import SyncJudgeClient

__all__ = ['REWARD_POLICY', 'PassRate', 'TestCase', 'pass_rates', 'pass_rates_sync']

REWARD_POLICY = BatchPolicy(max_batch_size=64, fill_wait_ms=2.0, max_batches_in_flight=8, route='/judge/long-batch')
"""Default policy for rewards: bigger batches on the ``/judge`` route (no stdout/stderr sent back)."""


@dataclasses.dataclass(frozen=True)
class TestCase:
    """One test: ``input`` fed to stdin, ``expected_output`` compared with stdout (both stripped)."""

    __test__ = False  # not a pytest test class

    input: str | None
    expected_output: str


@dataclasses.dataclass(frozen=True)
class PassRate:
    """Outcome of one solution over its tests."""

    passed: int
    total: int
    infra_errors: int = 0

    @property
    def rate(self) -> float:
        """``passed / total`` (0.0 without tests)."""
        return self.passed / self.total if self.total else 0.0

    @property
    def reliable(self) -> bool:
        """False when some test got no real verdict (mask this sample rather than train on it)."""
        return self.infra_errors == 0


Pair = tuple[str, Sequence[TestCase | tuple[str | None, str]]]


def _flatten(pairs: Iterable[Pair], language: Language) -> tuple[list[Submission], list[int]]:
    subs: list[Submission] = []
    counts: list[int] = []
    for solution, tests in pairs:
        counts.append(len(tests))
        for test in tests:
            stdin, expected = (test.input, test.expected_output) if isinstance(test, TestCase) else test
            subs.append(Submission(solution, type=language, input=stdin, expected_output=expected))
    return subs, counts


def _fold(outcomes: Sequence[Result | ToolkitError], counts: Sequence[int]) -> list[PassRate]:
    rates: list[PassRate] = []
    pos = 0
    for n in counts:
        chunk = outcomes[pos : pos + n]
        pos += n
        passed = sum(1 for o in chunk if isinstance(o, Result) and o.ok)
        infra = sum(1 for o in chunk if not isinstance(o, Result) or o.infra)
        rates.append(PassRate(passed=passed, total=n, infra_errors=infra))
    return rates


async def pass_rates(
    pairs: Iterable[Pair],
    *,
    processor: RequestProcessor | None = None,
    base_url: str = DEFAULT_BASE_URL,
    language: Language = 'python',
    deadline_s: float | None = None,
) -> list[PassRate]:
    """Pass rate of each ``(solution, tests)`` pair, in order.

    :param processor: a processor to reuse (its route should be ``/judge/long-batch``); by default a
        temporary one with :data:`REWARD_POLICY` is made and closed.
    :param deadline_s: per-test deadline (default: the processor policy's).
    """
    subs, counts = _flatten(pairs, language)
    if processor is not None:
        return _fold(await processor.submit_many(subs, deadline_s=deadline_s), counts)
    async with RequestProcessor(base_url, REWARD_POLICY) as proc:
        return _fold(await proc.submit_many(subs, deadline_s=deadline_s), counts)


def pass_rates_sync(
    pairs: Iterable[Pair],
    *,
    client: SyncJudgeClient | None = None,
    base_url: str = DEFAULT_BASE_URL,
    language: Language = 'python',
    deadline_s: float | None = None,
) -> list[PassRate]:
    """Blocking :func:`pass_rates` (thread-safe when a shared ``client`` is passed)."""
    subs, counts = _flatten(pairs, language)
    if client is not None:
        return _fold(client.submit_many(subs, deadline_s=deadline_s, judge=True), counts)
    with SyncJudgeClient(base_url, REWARD_POLICY) as own:
        return _fold(own.submit_many(subs, deadline_s=deadline_s, judge=True), counts)
