"""Live Python sessions on the judge, asynchronously: a notebook per trajectory that can branch.

A session keeps one interpreter's state between cells on one worker node (docs/sessions.md): call k
costs what call 1 costs, and ``fork(n)`` makes n sessions that start from its state (tree search,
GRPO groups sharing a prefix).  Every cell is recorded with its seed, so a session lost with its node
is rebuilt by replay (``result.restored``).

Usage::

    async with Sessions('http://127.0.0.1:8088') as sessions:
        nb = await sessions.create(seed=1)
        await nb.run('import sympy as sp; x = sp.Symbol("x")')
        res = await nb.run('sp.solve(x**2 - 4, x)')
        assert res.value == '[-2, 2]'
        branches = await nb.fork(4)

Each call retries infrastructure failures (connection, 5xx, 429, ``internal_error``) with backoff
within ``deadline_s``, under one call id, so a cell never runs twice however often it is sent.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, TypeVar

from toolkit.client import DEFAULT_BASE_URL, JudgeClient
from toolkit.errors import DeadlineExceeded, ToolkitError
from toolkit.models import Result
from toolkit.policy import RetryPolicy
from toolkit.wrapper import format_tool_text

__all__ = ['CellResult', 'Session', 'Sessions', 'cell_text']

T = TypeVar('T')


@dataclasses.dataclass(slots=True)
class CellResult(Result):
    """One cell's result: `Result`'s fields and the notebook's."""

    session_id: str = ''
    cell: int = -1
    value: str | None = None
    """``repr`` of the cell's trailing expression (None: no expression, or its value was None)."""
    restored: bool = False
    """The session was rebuilt by replaying its recorded cells before this one ran."""
    replayed: int = 0
    unfaithful: tuple[str, ...] = ()
    """Why this cell's replay may differ: ``clock``, ``entropy``, ``file``, ``network``, ``process``..."""
    session_ended: bool = False

    @classmethod
    def from_json(cls, data: Any) -> CellResult:
        """A cell result from the gateway's JSON (``BadResponse`` on a wrong shape)."""
        base = Result.from_json(data)
        out = cls(**{f.name: getattr(base, f.name) for f in dataclasses.fields(Result)})
        out.session_id = str(data.get('session_id') or '')
        out.cell = int(data.get('cell', -1))
        value = data.get('value')
        out.value = value if isinstance(value, str) else None
        out.restored = bool(data.get('restored'))
        out.replayed = int(data.get('replayed') or 0)
        out.unfaithful = tuple(str(r) for r in data.get('unfaithful') or ())
        out.session_ended = bool(data.get('session_ended'))
        return out


def cell_text(result: Result) -> str:
    """rStar2-Agent's tool text for a cell, its value printed after its output as the replay wrapper does."""
    value = getattr(result, 'value', None)
    if value is not None:
        result = dataclasses.replace(result, stdout=f'{result.stdout or ""}{value}\n')
    return format_tool_text(result)


class Sessions:
    """The judge's ``/sessions`` routes (see the module docstring).

    :param base_url: the gateway.
    :param deadline_s: how long one call may take, retries included.
    :param retry: when and how fast to resend after an infrastructure failure.
    :param client: a ``JudgeClient`` to share (not closed by us).
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        deadline_s: float = 300.0,
        retry: RetryPolicy | None = None,
        client: JudgeClient | None = None,
    ) -> None:
        self.deadline_s = deadline_s
        self.retry = retry or RetryPolicy()
        self.client = client or JudgeClient(base_url, timeout_s=deadline_s)
        self._owns_client = client is None

    async def _retrying(self, call: Callable[[], Awaitable[T]], is_infra: Callable[[T], bool] = lambda _: False) -> T:
        deadline = time.monotonic() + self.deadline_s
        attempt = 0
        while True:
            attempt += 1
            try:
                outcome = await call()
                if not is_infra(outcome) or attempt >= self.retry.max_attempts:
                    return outcome
            except ToolkitError as err:
                err.attempts = attempt
                if not err.retryable or attempt >= self.retry.max_attempts:
                    raise
            wait = self.retry.backoff_s(attempt, random.Random())
            if time.monotonic() + wait >= deadline:
                raise DeadlineExceeded(f'no answer within {self.deadline_s} s ({attempt} attempts)')
            await asyncio.sleep(wait)

    async def create(
        self,
        *,
        session_id: str | None = None,
        kind: str = 'scientific',
        memory_mb: int | None = None,
        time_s: float | None = None,
        ttl_s: float | None = None,
        seed: int | None = None,
    ) -> Session:
        """A new live session (``kind``: ``scientific``, sympy and numpy preloaded, or ``lean``)."""
        body = {
            'session_id': session_id,
            'kind': kind,
            'memory_mb': memory_mb,
            'time_s': time_s,
            'ttl_s': ttl_s,
            'seed': seed,
        }
        body = {k: v for k, v in body.items() if v is not None}
        info = await self._retrying(lambda: self.client.request('POST', '/sessions', body))
        return Session(self, str(info['session_id']), info)

    def session(self, session_id: str) -> Session:
        """A handle on an existing session."""
        return Session(self, session_id, {})

    async def run(
        self,
        session_id: str,
        code: str,
        *,
        stdin: str | None = None,
        time_s: float | None = None,
        value: bool = True,
        error_style: str = 'traceback',
        busy: str = 'wait',
    ) -> CellResult:
        """Run one cell (``error_style='line'``: rStar2-Agent's one-line errors)."""
        body: dict[str, Any] = {'code': code, 'value': value, 'error_style': error_style, 'busy': busy}
        body |= {'call_id': uuid.uuid4().hex} | ({'stdin': stdin} if stdin is not None else {})
        body |= {'time_s': time_s} if time_s is not None else {}
        path = f'/sessions/{session_id}/cells'

        async def once() -> CellResult:
            return CellResult.from_json(await self.client.request('POST', path, body))

        started = time.monotonic()
        result = await self._retrying(once, lambda r: r.infra)
        result.latency_s = time.monotonic() - started
        return result

    async def fork(self, session_id: str, n: int = 1, *, session_ids: list[str] | None = None) -> list[Session]:
        """``n`` new sessions that start from ``session_id``'s state."""
        body: dict[str, Any] = {'n': n} | ({'session_ids': session_ids} if session_ids else {})
        answer = await self._retrying(lambda: self.client.request('POST', f'/sessions/{session_id}/fork', body))
        return [Session(self, str(c['session_id']), {'mode': c.get('mode')}) for c in answer['children']]

    async def info(self, session_id: str) -> dict[str, Any]:
        """Where the session lives, its cells, which of them replay unfaithfully."""
        answer: dict[str, Any] = await self._retrying(lambda: self.client.request('GET', f'/sessions/{session_id}'))
        return answer

    async def close(self, session_id: str) -> bool:
        """End the session (False: there was none)."""
        try:
            await self._retrying(lambda: self.client.request('DELETE', f'/sessions/{session_id}'))
        except ToolkitError as err:
            if err.status == 404:
                return False
            raise
        return True

    async def aclose(self) -> None:
        """Close the HTTP client if it is ours."""
        if self._owns_client:
            await self.client.close()

    async def __aenter__(self) -> Sessions:
        return self

    async def __aexit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()


class Session:
    """One live session: ``run``, ``fork``, ``info``, ``close`` (also ``async with``: closed on exit)."""

    def __init__(self, sessions: Sessions, session_id: str, info: dict[str, Any]) -> None:
        self.sessions = sessions
        self.id = session_id
        self.info_at_start = info

    async def run(self, code: str, **kwargs: Any) -> CellResult:
        """Run one cell (see `Sessions.run`)."""
        return await self.sessions.run(self.id, code, **kwargs)

    async def fork(self, n: int = 1, **kwargs: Any) -> list[Session]:
        """``n`` sessions that start from this one's state."""
        return await self.sessions.fork(self.id, n, **kwargs)

    async def info(self) -> dict[str, Any]:
        """`Sessions.info` of this session."""
        return await self.sessions.info(self.id)

    async def close(self) -> bool:
        """End this session."""
        return await self.sessions.close(self.id)

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f'Session({self.id!r})'
