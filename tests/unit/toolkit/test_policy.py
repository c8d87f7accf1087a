"""Retry and batching policy (`toolkit.policy`): what is retried, the backoff, rStar-style configs."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.support.toolkit_fakes import make_result
from toolkit import (
    DeadlineExceeded,
    JudgeBusy,
    JudgeUnavailable,
    ProcessorClosed,
    RequestRejected,
    RetryPolicy,
    is_retryable,
)
from toolkit.errors import BadResponse, RequestTimeout
from toolkit.policy import policy_from_config


@pytest.mark.parametrize(
    ('outcome', 'retry'),
    [
        (make_result(reason='queue_timeout', success=False, run_success=False), True),
        (make_result(reason='internal_error', success=False, run_success=False), True),
        (make_result(reason='worker_timeout', success=False, run_success=False), False),
        (make_result(reason='', success=False, run_success=True), False),
        (JudgeUnavailable('x'), True),
        (JudgeBusy('x', status=429, retry_after_s=1), True),
        (RequestTimeout('x'), True),
        (BadResponse('x'), True),
        (RequestRejected('x', status=422), False),
        (DeadlineExceeded('x'), False),
        (ProcessorClosed('x'), False),
        (ValueError('x'), False),
    ],
)
def test_retry_classification(outcome: Any, retry: bool) -> None:
    assert is_retryable(outcome) is retry


def test_backoff_is_jittered_exponential_and_capped() -> None:
    policy = RetryPolicy(backoff_base_s=0.1, backoff_max_s=1.0)
    rng = random.Random(7)
    for attempt, cap in [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.8), (5, 1.0), (9, 1.0)]:
        delays = [policy.backoff_s(attempt, rng) for _ in range(50)]
        assert all(cap / 2 <= d <= cap for d in delays)
        assert len({round(d, 6) for d in delays}) > 10  # jittered, not constant
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


def test_policy_from_rstar_config() -> None:
    base_url, policy = policy_from_config(
        {
            'type': 'native',
            'host_addr': 'judge.local',
            'host_port': '8088',
            'request_processor_batch_size': 32,
            'request_processor_concurrency': 8,
            'request_processor_batch_timeout_seconds': 30,
        }
    )
    assert base_url == 'http://judge.local:8088'
    assert (policy.max_batch_size, policy.max_batches_in_flight, policy.fill_wait_ms) == (32, 8, 5.0)
    assert policy_from_config({'base_url': 'http://x:1', 'fill_wait_ms': 50})[1].fill_wait_ms == 50
