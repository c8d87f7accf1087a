"""Live Python sessions on the wire: the HTTP models of ``/sessions*`` and the gateway -> worker job.

A session is a notebook that lives on one worker node between its cells (docs/sessions.md).  Its
cell results are `SubmissionResult`'s fields plus what a notebook adds (`CellResult`).  Plain
pydantic and typed dicts; nothing here imports Celery.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, Field, field_validator

from judge.contracts.http import SEED_MAX, SubmissionResult, _check_unicode

SESSION_TASK = 'judge.session'
"""Celery task name of one session operation (create, cell, fork, close) on a session's node."""
SESSION_ID = r'^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'
FORK_MAX = 64
Kind = Literal['scientific', 'lean']
"""The warm parent a session is forked from: sympy and numpy preloaded, or the light preload only."""


MIN_SESSION_MEMORY_MB = 16
"""Below this a session process may not even start (its start would look like the judge's failure)."""


class SessionCreate(BaseModel):
    """``POST /sessions``: a new live Python session."""

    model_config = ConfigDict(extra='forbid')

    session_id: str | None = Field(
        None, pattern=SESSION_ID, description='chosen by the client (unique); absent: a fresh id'
    )
    kind: Kind = 'scientific'
    memory_mb: int | None = Field(
        None,
        ge=MIN_SESSION_MEMORY_MB,
        description=f"the session's memory limit, MiB, at least {MIN_SESSION_MEMORY_MB} (default MAX_MEMORY)",
    )
    time_s: float | None = Field(None, gt=0, description="each cell's wall-clock limit (default MAX_EXECUTION_TIME)")
    ttl_s: float | None = Field(
        None, gt=0, description='idle time after which the session expires (default JUDGE_SESSION_TTL_S)'
    )
    seed: int | None = Field(
        None, ge=0, le=SEED_MAX, description="each cell's randomness derives from it; absent: recorded fresh seeds"
    )


class CellRequest(BaseModel):
    """``POST /sessions/{id}/cells``: run one cell."""

    model_config = ConfigDict(extra='forbid')

    code: str
    stdin: str | None = None
    time_s: float | None = Field(None, gt=0, description="this cell's wall-clock limit (at most the session's)")
    value: bool = Field(True, description="report the trailing expression's repr in `value`")
    error_style: Literal['traceback', 'line'] = 'traceback'
    busy: Literal['wait', 'error'] = Field('wait', description='another cell is running: wait for it, or answer 409')
    call_id: str | None = Field(
        None, pattern=SESSION_ID, description='the same id on a call sent again: its first answer, the cell run once'
    )

    @field_validator('code', 'stdin')
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        return _check_unicode(value)


class ForkRequest(BaseModel):
    """``POST /sessions/{id}/fork``: ``n`` new sessions starting from this one's state."""

    model_config = ConfigDict(extra='forbid')

    n: int = Field(1, ge=1, le=FORK_MAX)
    session_ids: list[str] | None = Field(None, description="the children's ids (n of them); absent: fresh ids")


class UnfaithfulCell(BaseModel):
    """A recorded cell whose replay may not repeat what it did."""

    cell: int
    reasons: list[str]


class SessionInfo(BaseModel):
    """What the judge knows of a session (``GET /sessions/{id}``; also the answer to ``POST /sessions``)."""

    session_id: str
    node: str | None
    node_alive: bool
    live: bool = Field(description='a live process holds its state now (else the next call rebuilds it by replay)')
    cells: int
    kind: str
    ttl_s: float
    idle_s: float
    created: float
    parent: str | None = None
    forked_at: int | None = None
    unfaithful: list[UnfaithfulCell] = []


class CellResult(SubmissionResult):
    """One cell's result: `SubmissionResult`'s fields, and the notebook's."""

    session_id: str
    cell: int = Field(description="the cell's index in the session (0 first)")
    value: str | None = Field(None, description="repr of the cell's trailing expression, Jupyter-style")
    restored: bool = Field(False, description='the session was rebuilt by replaying its recorded cells first')
    replayed: int = 0
    unfaithful: list[str] = Field([], description="why this cell's replay may differ (clock, file, network...)")
    session_ended: bool = Field(
        False, description='the cell ended the session; the next call starts from the cells before it'
    )
    node: str | None = None


class ForkChild(BaseModel):
    """One new session of a fork."""

    session_id: str
    mode: Literal['process', 'replay'] = Field(description='a fork of the live process, or rebuilt by replay')


class ForkResult(BaseModel):
    """The answer to a fork."""

    session_id: str
    children: list[ForkChild]
    cost: float
    fork_s: float | None = Field(None, description="the session host's own time to fork the live process")


class SessionJob(TypedDict):
    """The one argument of the `SESSION_TASK` task."""

    op: Literal['create', 'cell', 'fork', 'close']
    sid: str
    epoch: int
    reply_to: str
    call: str
    cell: NotRequired[dict[str, object]]
    children: NotRequired[list[str]]


def check_id(value: str) -> str:
    """A session id as `SESSION_ID` allows (ValueError otherwise)."""
    import re

    if not re.fullmatch(SESSION_ID, value):
        raise ValueError(f'bad session id {value!r}')
    _check_unicode(value)
    return value
