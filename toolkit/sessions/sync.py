"""``SyncSessions``: the session API (`toolkit.sessions`) for code without an event loop.

A private event loop runs in a daemon thread; every method hands its coroutine to it and waits, so any
number of threads may share one ``SyncSessions``.

Usage::

    with SyncSessions('http://127.0.0.1:8088') as sessions:
        nb = sessions.create()
        nb.run('x = 21')
        assert nb.run('x * 2').value == '42'
        left, right = nb.fork(2)
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, TypeVar

from toolkit.client import DEFAULT_BASE_URL
from toolkit.errors import ProcessorClosed
from toolkit.policy import RetryPolicy
from toolkit.sessions.client import CellResult, Session, Sessions

__all__ = ['SyncSession', 'SyncSessions']

T = TypeVar('T')


class SyncSessions:
    """Blocking `toolkit.sessions.Sessions` (the same arguments)."""

    def __init__(
        self, base_url: str = DEFAULT_BASE_URL, *, deadline_s: float = 300.0, retry: RetryPolicy | None = None
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name='toolkit-sessions-loop', daemon=True)
        self._thread.start()
        self._closed = False
        self.sessions = Sessions(base_url, deadline_s=deadline_s, retry=retry)
        self.wait_s = deadline_s + 10

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the private loop and wait for it."""
        if self._closed:
            coro.close()
            raise ProcessorClosed('SyncSessions is closed')
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(self.wait_s)

    def create(self, **kwargs: Any) -> SyncSession:
        """A new live session (`Sessions.create`'s arguments)."""
        return SyncSession(self, self.call(self.sessions.create(**kwargs)))

    def session(self, session_id: str) -> SyncSession:
        """A handle on an existing session."""
        return SyncSession(self, self.sessions.session(session_id))

    def close(self) -> None:
        """Close the HTTP client and stop the loop thread (sessions stay: close them, or their TTL ends them)."""
        if self._closed:
            return
        self.call(self.sessions.aclose())
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> SyncSessions:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class SyncSession:
    """One live session, blocking: ``run``, ``fork``, ``info``, ``close``."""

    def __init__(self, owner: SyncSessions, session: Session) -> None:
        self.owner = owner
        self.session = session
        self.id = session.id

    def run(self, code: str, **kwargs: Any) -> CellResult:
        """Run one cell (`Sessions.run`'s arguments)."""
        return self.owner.call(self.session.run(code, **kwargs))

    def fork(self, n: int = 1, **kwargs: Any) -> list[SyncSession]:
        """``n`` sessions that start from this one's state."""
        return [SyncSession(self.owner, s) for s in self.owner.call(self.session.fork(n, **kwargs))]

    def info(self) -> dict[str, Any]:
        """Where it lives, its cells."""
        return self.owner.call(self.session.info())

    def close(self) -> bool:
        """End the session."""
        return self.owner.call(self.session.close())

    def __repr__(self) -> str:
        return f'SyncSession({self.id!r})'
