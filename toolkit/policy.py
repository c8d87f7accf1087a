"""Value objects that configure the toolkit: :class:`RetryPolicy` and :class:`BatchPolicy`.

Both are frozen (hashable) so that :func:`toolkit.get_shared` can key processors on them.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from toolkit.errors import ToolkitError
from toolkit.models import Result

__all__ = ['BatchPolicy', 'RetryPolicy', 'is_retryable', 'policy_from_config']


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """When and how fast to resend items that failed for infrastructure reasons.

    ``RetryPolicy(max_attempts=4, backoff_base_s=0.1)`` waits about 0.1, 0.2, 0.4 s (jittered)
    between attempts.  The budget allows on average ``budget_ratio`` retries per submission, plus
    ``budget_min_tokens`` to start with, so that an outage cannot turn into a retry storm.
    """

    max_attempts: int = 4
    backoff_base_s: float = 0.1
    backoff_max_s: float = 5.0
    budget_ratio: float = 0.5
    budget_min_tokens: float = 64.0
    budget_max_tokens: float = 1024.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError('max_attempts must be >= 1')
        if self.backoff_base_s < 0 or self.backoff_max_s < self.backoff_base_s:
            raise ValueError('need 0 <= backoff_base_s <= backoff_max_s')

    def backoff_s(self, attempt: int, rng: random.Random | None = None) -> float:
        """Delay before the retry that follows failed attempt ``attempt`` (1-based), equal jitter:
        uniformly between half and all of ``min(backoff_max_s, backoff_base_s * 2**(attempt-1))``."""
        cap = min(self.backoff_max_s, self.backoff_base_s * 2.0 ** max(attempt - 1, 0))
        return cap / 2 + float((rng or random).uniform(0, cap / 2))


@dataclasses.dataclass(frozen=True)
class BatchPolicy:
    """How a ``RequestProcessor`` batches, times out and retries.

    ``BatchPolicy(max_batch_size=32, fill_wait_ms=5, max_batches_in_flight=8)`` is rStar's shape
    (8 senders x 32) without its 0.5 s sleep after every batch.

    :param max_batch_size: most submissions per HTTP request.
    :param fill_wait_ms: how long a batch may wait for more items, counted from its oldest item.
    :param max_batches_in_flight: most HTTP requests open at once.
    :param route: batch route, e.g. ``'/run/long-batch'`` or ``'/judge/long-batch'``.
    :param deadline_s: default end-to-end deadline of one submission (queueing and retries included).
    :param request_timeout_s: timeout of one HTTP request.
    """

    max_batch_size: int = 32
    fill_wait_ms: float = 5.0
    max_batches_in_flight: int = 8
    route: str = '/run/long-batch'
    deadline_s: float = 300.0
    request_timeout_s: float = 120.0
    retry: RetryPolicy = RetryPolicy()

    def __post_init__(self) -> None:
        if self.max_batch_size < 1 or self.max_batches_in_flight < 1:
            raise ValueError('max_batch_size and max_batches_in_flight must be >= 1')
        if self.fill_wait_ms < 0 or self.deadline_s <= 0 or self.request_timeout_s <= 0:
            raise ValueError('fill_wait_ms must be >= 0, deadline_s and request_timeout_s > 0')


def is_retryable(outcome: Result | BaseException) -> bool:
    """Whether an outcome is an infrastructure failure worth sending again: a result with reason
    ``queue_timeout``/``internal_error``, or a retryable ``ToolkitError`` (connection, 5xx, 429)."""
    if isinstance(outcome, Result):
        return outcome.infra
    if isinstance(outcome, ToolkitError):
        return outcome.retryable
    return False


def policy_from_config(config: dict[str, Any]) -> tuple[str, BatchPolicy]:
    """Base URL and batch policy from a tool config (rStar's keys plus ours).

    rStar's ``request_processor_batch_timeout_seconds`` was an idle-poll interval; here it only caps
    the fill wait (``fill_wait_ms``, default 5 ms), so rStar YAMLs work unchanged and stay fast.
    """
    base_url = (
        config.get('base_url') or f'http://{config.get("host_addr", "127.0.0.1")}:{config.get("host_port", 8088)}'
    )
    fill_wait_ms = float(config.get('fill_wait_ms', 5.0))
    if 'request_processor_batch_timeout_seconds' in config:
        fill_wait_ms = min(fill_wait_ms, float(config['request_processor_batch_timeout_seconds']) * 1000)
    policy = BatchPolicy(
        max_batch_size=int(config.get('request_processor_batch_size', 32)),
        max_batches_in_flight=int(config.get('request_processor_concurrency', 8)),
        fill_wait_ms=fill_wait_ms,
        route=str(config.get('route', '/run/long-batch')),
        deadline_s=float(config.get('deadline_s', 120.0)),
        request_timeout_s=float(config.get('request_timeout_s', 60.0)),
        retry=RetryPolicy(max_attempts=int(config.get('max_attempts', 4))),
    )
    return base_url, policy
