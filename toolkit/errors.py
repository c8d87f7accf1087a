"""Errors raised by the client toolkit.

Every error the toolkit raises derives from :class:`ToolkitError`::

    ToolkitError
    ├── JudgeUnavailable        the gateway could not be reached or failed (retryable)
    │   ├── JudgeBusy           HTTP 429 back-pressure, carries ``retry_after_s``
    │   └── RequestTimeout      one HTTP request took longer than its timeout
    ├── BadResponse             the gateway answered with something we cannot read (retryable)
    ├── RequestRejected         HTTP 4xx other than 429: the request itself is wrong (not retryable)
    ├── DeadlineExceeded        a submission's end-to-end deadline passed before an answer came
    ├── ProcessorClosed         the RequestProcessor was closed before the submission was answered
    └── EvaluationError         `toolkit.evaluate`: input that is not JSONL objects

``retryable`` tells whether sending the same request again may succeed; the batcher retries only
retryable errors (and results whose ``reason`` is ``queue_timeout`` or ``internal_error``).
"""

from __future__ import annotations

__all__ = [
    'BadResponse',
    'DeadlineExceeded',
    'JudgeBusy',
    'JudgeUnavailable',
    'ProcessorClosed',
    'RequestRejected',
    'RequestTimeout',
    'ToolkitError',
]


class ToolkitError(Exception):
    """Root of the toolkit's errors."""

    retryable: bool = False
    """Whether the same request may succeed when sent again."""

    infra: bool = True
    """Whether the failure is the infrastructure's fault (trainers should mask, not learn from it)."""

    def __init__(self, message: str, *, status: int | None = None, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after_s = retry_after_s
        self.attempts = 0

    @property
    def reason(self) -> str:
        """The upstream ``reason`` string closest to this failure (used for the tool text)."""
        return 'internal_error'


class JudgeUnavailable(ToolkitError):
    """Connection refused/reset, DNS failure or HTTP 5xx.  Check that the gateway is running."""

    retryable = True


class JudgeBusy(JudgeUnavailable):
    """HTTP 429: the gateway asks us to slow down; ``retry_after_s`` comes from ``Retry-After``."""


class RequestTimeout(JudgeUnavailable):
    """One HTTP request exceeded its timeout; raise ``request_timeout_s`` for very long batches."""


class BadResponse(ToolkitError):
    """The gateway's answer is not the expected JSON (wrong shape, wrong length, not JSON)."""

    retryable = True


class RequestRejected(ToolkitError):
    """HTTP 4xx (413 too large, 422 invalid): fix the submission, sending it again will not help."""

    infra = False


class DeadlineExceeded(ToolkitError):
    """No answer arrived before the submission's deadline; raise ``deadline_s`` or add workers."""

    @property
    def reason(self) -> str:
        """A missed deadline looks like upstream's ``queue_timeout`` to the model."""
        return 'queue_timeout'


class ProcessorClosed(ToolkitError):
    """The RequestProcessor was closed; create a new one (or use ``get_shared``)."""
