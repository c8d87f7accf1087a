"""The session host's registry without processes: LRU eviction under the memory budget and the count,
idle TTL, busy sessions kept, and the journal."""

from __future__ import annotations

import threading
from typing import Any

from judge.sandbox.server.sessions.registry import ENDED, EVICTED, EXPIRED, Registry

MIB = 1 << 20


class FakeLive:
    def __init__(self, sid: str, used_at: float, memory_mb: int, ttl_s: float = 600, alive: bool = True) -> None:
        self.sid, self.used_at, self.ttl_s = sid, used_at, ttl_s
        self.memory_bytes = memory_mb * MIB
        self.lock = threading.Lock()
        self._alive = alive

    def alive(self) -> bool:
        return self._alive


def registry(budget_mb: int, count: int, lives: list[FakeLive]) -> tuple[Registry, list[Any]]:
    gone: list[Any] = []
    reg = Registry(budget_mb * MIB, count, gone.append)
    for live in lives:
        reg.add(live)  # type: ignore[arg-type]
    return reg, gone


def test_the_least_recently_used_idle_sessions_make_room() -> None:
    a, b, c = FakeLive('a', 1.0, 10), FakeLive('b', 3.0, 10), FakeLive('c', 2.0, 10)
    reg, gone = registry(30, 100, [a, b, c])
    assert reg.make_room(5 * MIB) == 1 and gone == [a]  # 30 + 5 > 30: the oldest goes
    assert reg.drain() == [('a', EVICTED)] and reg.drain() == []
    assert reg.make_room(15 * MIB) == 1 and gone == [a, c]


def test_a_busy_session_is_never_evicted() -> None:
    a, b = FakeLive('a', 1.0, 10), FakeLive('b', 2.0, 10)
    reg, gone = registry(15, 100, [a, b])
    with a.lock:  # a cell runs in it
        reg.make_room(0)
    assert gone == [b] and reg.get('a') is a


def test_the_count_bounds_sessions_too() -> None:
    lives = [FakeLive(str(i), float(i), 1) for i in range(5)]
    reg, gone = registry(10_000, 5, lives)
    assert reg.make_room(0, sessions=2) == 2 and [g.sid for g in gone] == ['0', '1']


def test_idle_sessions_expire_and_dead_ones_end() -> None:
    old, fresh, dead = (
        FakeLive('old', 0.0, 1, ttl_s=10),
        FakeLive('fresh', 95.0, 1, ttl_s=10),
        FakeLive('dead', 95.0, 1, alive=False),
    )
    reg, gone = registry(100, 100, [old, fresh, dead])
    assert reg.expire(now=100.0) == 2
    assert sorted(reg.drain()) == [('dead', ENDED), ('old', EXPIRED)] and reg.get('fresh') is fresh
