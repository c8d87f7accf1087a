"""Client-side mirrors of the gateway's wire JSON: :class:`Submission` and :class:`Result`.

Plain dataclasses (no pydantic) so that the toolkit stays light and fast; ``Result.from_json``
checks the few fields training depends on and raises :class:`~toolkit.errors.BadResponse` otherwise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

from toolkit.errors import BadResponse

__all__ = ['INFRA_REASONS', 'Language', 'Result', 'Submission']

Language = Literal['python', 'cpp', 'c', 'java', 'javascript', 'go', 'rust', 'bash']

INFRA_REASONS = frozenset({'queue_timeout', 'internal_error'})
"""``reason`` values that mean the infrastructure failed (retryable), not the program."""


@dataclasses.dataclass(slots=True)
class Submission:
    """One program to run: upstream's ``Submission``.

    :param solution: source code.
    :param type: ``'python'`` or ``'cpp'``.
    :param input: text fed to stdin (``None``: no input).
    :param expected_output: when set, ``success`` also requires matching stdout (both sides stripped).
    :param sub_id: optional id; the gateway makes one when empty.
    :param seed: Python only: replay the run's randomness (``random``, numpy, ``str`` hashing) with this
        seed (0 to 2**32 - 1); ``None``: fresh randomness.  A seeded run starts a fresh interpreter.
    """

    solution: str
    type: Language = 'python'
    input: str | None = None
    expected_output: str | None = None
    sub_id: str | None = None
    seed: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON object sent on the wire (``None`` fields left out)."""
        body: dict[str, Any] = {'type': self.type, 'solution': self.solution}
        if self.input is not None:
            body['input'] = self.input
        if self.expected_output is not None:
            body['expected_output'] = self.expected_output
        if self.sub_id:
            body['sub_id'] = self.sub_id
        if self.seed is not None:
            body['seed'] = self.seed
        return body


def _opt_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    raise BadResponse(f'field {key!r} should be a string, got {type(value).__name__}')


@dataclasses.dataclass(slots=True)
class Result:
    """The gateway's ``SubmissionResult`` (or ``JudgeResult``: ``stdout``/``stderr`` stay ``None``).

    ``runtime`` is the digest of the submission runtime the program ran in.  The last three fields
    are filled in by the client: how many HTTP attempts it took, the
    end-to-end latency seen by the caller and the size of the HTTP batch that answered.
    """

    sub_id: str
    success: bool
    run_success: bool
    cost: float
    reason: str = ''
    stdout: str | None = None
    stderr: str | None = None
    verdict: str | None = None
    exit_code: int | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    error: str | None = None
    runtime: str | None = None
    attempts: int = 1
    latency_s: float = 0.0
    batch_size: int = 1

    @property
    def infra(self) -> bool:
        """True when ``reason`` says the infrastructure failed (``queue_timeout``/``internal_error``)."""
        return self.reason in INFRA_REASONS

    @property
    def ok(self) -> bool:
        """True when the program ran to exit code 0 and (if asked) produced the expected output."""
        return self.success and self.run_success

    @classmethod
    def from_json(cls, data: Any) -> Result:
        """Build a result from one decoded JSON object; raise ``BadResponse`` on a wrong shape."""
        if not isinstance(data, Mapping):
            raise BadResponse(f'result should be a JSON object, got {type(data).__name__}')
        try:
            success, run_success, cost = data['success'], data['run_success'], data['cost']
        except KeyError as e:
            raise BadResponse(f'result lacks field {e.args[0]!r}') from e
        if not isinstance(success, bool) or not isinstance(run_success, bool):
            raise BadResponse('fields success/run_success should be booleans')
        if not isinstance(cost, int | float) or isinstance(cost, bool):
            raise BadResponse('field cost should be a number')
        exit_code = data.get('exit_code')
        return cls(
            sub_id=str(data.get('sub_id') or ''),
            success=success,
            run_success=run_success,
            cost=float(cost),
            reason=_opt_str(data, 'reason') or '',
            stdout=_opt_str(data, 'stdout'),
            stderr=_opt_str(data, 'stderr'),
            verdict=_opt_str(data, 'verdict'),
            exit_code=exit_code if isinstance(exit_code, int) else None,
            stdout_truncated=bool(data.get('stdout_truncated', False)),
            stderr_truncated=bool(data.get('stderr_truncated', False)),
            error=_opt_str(data, 'error'),
            runtime=_opt_str(data, 'runtime'),
        )

    def to_json(self) -> dict[str, Any]:
        """All fields as a JSON-able dict (wire fields and client-side ones)."""
        return dataclasses.asdict(self)
