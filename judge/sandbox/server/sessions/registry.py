"""The host's live sessions: lookup, idle TTL, the memory budget and its least-recently-used evictions.

Sessions cost the node memory only (frozen between cells, no CPU, no slot), so the host bounds them
by a memory budget (`JUDGE_SESSION_MEMORY_MB`) and a count: before a session is made, and every few
seconds, the least recently used idle sessions are *evicted* (killed; their cells stay recorded, so
their next call rebuilds them by replay, `judge.worker.sessions`) until the rest fits.  An idle
session older than its TTL is *expired* (gone for good).  Both are told to the worker in the journal
every reply carries (`Registry.drain`), which records them in Redis.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from judge.sandbox.server.sessions.process import Live

EVICTED = 'evicted'
EXPIRED = 'expired'
ENDED = 'ended'


class Registry:
    """Live sessions by id (see the module's doc)."""

    def __init__(self, budget_bytes: int, max_sessions: int, discard: Callable[[Live], None]) -> None:
        self.budget_bytes = budget_bytes
        self.max_sessions = max_sessions
        self._discard = discard
        self._sessions: dict[str, Live] = {}
        self._lock = threading.Lock()
        self._journal: list[tuple[str, str]] = []

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, sid: str) -> Live | None:
        """The live session ``sid``, if this host has it."""
        with self._lock:
            return self._sessions.get(sid)

    def add(self, live: Live) -> None:
        """Register a new live session."""
        with self._lock:
            self._sessions[live.sid] = live

    def pop(self, sid: str) -> Live | None:
        """Forget ``sid`` (the caller discards it)."""
        with self._lock:
            return self._sessions.pop(sid, None)

    def all(self) -> list[Live]:
        """Every live session."""
        with self._lock:
            return list(self._sessions.values())

    def memory_bytes(self) -> int:
        """The sessions' memory as last measured (`refresh`)."""
        return sum(live.memory_bytes for live in self.all())

    def refresh(self) -> None:
        """Measure every session's memory (its cgroup's charge)."""
        for live in self.all():
            live.memory_bytes = live.group.memory_bytes()

    def note(self, sid: str, reason: str) -> None:
        """Tell the worker, in the next reply, that ``sid`` is gone here (`EVICTED`, `EXPIRED`, `ENDED`)."""
        with self._lock:
            self._journal.append((sid, reason))

    def drain(self) -> list[tuple[str, str]]:
        """The journal since the last call."""
        with self._lock:
            journal, self._journal = self._journal, []
        return journal

    def _take_idle(self, live: Live) -> bool:
        """Lock ``live`` if no operation holds it; False when one does."""
        return live.lock.acquire(blocking=False)

    def _drop(self, live: Live, reason: str) -> None:
        """Discard a locked idle session and journal why."""
        try:
            if self.pop(live.sid) is live:
                self._discard(live)
                self.note(live.sid, reason)
        finally:
            live.lock.release()

    def make_room(self, need_bytes: int, sessions: int = 1) -> int:
        """Evict least recently used idle sessions until ``sessions`` more of ``need_bytes`` in all fit the
        budget and the count; how many were evicted."""
        evicted = 0
        for live in sorted(self.all(), key=lambda s: s.used_at):
            over_memory = self.memory_bytes() + need_bytes > self.budget_bytes
            over_count = len(self) + sessions > self.max_sessions
            if not (over_memory or over_count):
                break
            if self._take_idle(live):
                self._drop(live, EVICTED)
                evicted += 1
        return evicted

    def expire(self, now: float | None = None) -> int:
        """Discard idle sessions past their TTL, and sessions whose process died; how many."""
        now = time.monotonic() if now is None else now
        gone = 0
        for live in self.all():
            old = now - live.used_at > live.ttl_s
            if (old or not live.alive()) and self._take_idle(live):
                self._drop(live, EXPIRED if old else ENDED)
                gone += 1
        return gone
