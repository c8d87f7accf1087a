"""Counters kept by a ``RequestProcessor`` (see ``RequestProcessor.stats()``)."""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

from toolkit.models import Result

__all__ = ['ProcessorStats']


@dataclasses.dataclass
class ProcessorStats:
    """Mutable counters; ``snapshot()`` turns them into a plain dict for logs and metrics."""

    submitted: int = 0
    answered: int = 0
    infra_results: int = 0
    errors: int = 0
    deadline_exceeded: int = 0
    cancelled: int = 0
    retries: int = 0
    retries_denied: int = 0
    batches: int = 0
    batch_errors: int = 0
    batch_splits: int = 0
    batch_items: int = 0
    http_s_total: float = 0.0
    http_s_max: float = 0.0
    http_ok: int = 0
    batch_sizes: collections.Counter[int] = dataclasses.field(default_factory=collections.Counter)

    def record_batch(self, size: int) -> None:
        """One HTTP batch of ``size`` items is being sent."""
        self.batches += 1
        self.batch_items += size
        self.batch_sizes[size] += 1

    def record_latency(self, seconds: float) -> None:
        """One HTTP batch came back after ``seconds``."""
        self.http_ok += 1
        self.http_s_total += seconds
        self.http_s_max = max(self.http_s_max, seconds)

    def record_result(self, result: Result) -> None:
        """A caller got ``result``."""
        self.answered += 1
        if result.infra:
            self.infra_results += 1

    def snapshot(self, **extra: int) -> dict[str, Any]:
        """All counters, derived means and ``extra`` gauges as a JSON-able dict."""
        out: dict[str, Any] = dataclasses.asdict(self)
        out['batch_sizes'] = dict(sorted(self.batch_sizes.items()))
        out['mean_batch_size'] = self.batch_items / self.batches if self.batches else 0.0
        out['http_s_mean'] = self.http_s_total / self.http_ok if self.http_ok else 0.0
        out.update(extra)
        return out
