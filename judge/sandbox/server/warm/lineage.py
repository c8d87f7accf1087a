"""One kind of warm parent's zygotes and their renewal.

Every child forked from one zygote shares its address-space layout and its ``str`` hash secret
(set when an interpreter starts, it cannot change afterwards).  So that one execution's
observations predict little of others', each zygote serves a bounded number of executions
(``renew_execs``) for a bounded time (``renew_s``); then a fresh one, started in the background
while the old one keeps serving, takes over, and the old one goes once its last child is reaped.
Which kind serves a program is `judge.sandbox.server.warm.parents`' choice.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from judge.sandbox.errors import ZygoteLost
from judge.sandbox.lazylog import get_logger
from judge.sandbox.server.execute import Spare
from judge.sandbox.server.warm.zygotes import Zygote

logger = get_logger('judge.sandbox.server.warm.lineage')

RENEW_EXECS = 1000
SCIENTIFIC_RENEW_EXECS = 5000
"""The scientific parent's bound: its start (sympy, numpy and the warm-up) costs about 0.7 s of CPU
against tens of ms for the lean one, about 1 ms per math execution when renewed every 1000."""
RENEW_S = 300.0
START_TIMEOUT_S = 60.0
RETRY_S = 5.0
"""After a replacement failed to start, how long until the next try (the old zygote keeps serving)."""
EARLY = 0.8
"""A replacement starts when its zygote has done this share of its executions or time, so that it is
usually ready (in the background) before the bound is reached."""


class Lineage:
    """The zygotes of one kind: the current one, its replacement while it starts, retired ones."""

    def __init__(self, kind: str, start: Callable[[str], Zygote], renew_execs: int, renew_s: float) -> None:
        self.kind = kind
        self._start = start
        self.renew_execs = renew_execs
        self.renew_s = renew_s
        self.current: Zygote | None = None
        self.standby: Zygote | None = None
        self.retired: list[Zygote] = []
        self._retry_at = 0.0
        """When a replacement that failed to start may be tried again."""

    def zygotes(self) -> list[Zygote]:
        """Every zygote of the lineage that still runs or has children."""
        found = [z for z in (self.current, self.standby) if z is not None]
        return found + self.retired

    def spare(self, workdir: str) -> Spare:
        """A spare forked by the current zygote.

        A zygote never forks past its bounds: if its replacement is not ready by then (it started in
        the background at `EARLY` of the bounds), this waits for it; with no zygote at all, one is
        started here.
        """
        self._promote()
        if self.current is not None and self.current.due(self.renew_execs, self.renew_s):
            if self.standby is None:
                self.standby = self._start(self.kind)
            self._wait_standby()
        elif self.current is None:
            self.standby = self.standby or self._start(self.kind)
            self._wait_standby()
        current = self.current
        assert current is not None
        try:
            return current.fork_spare(workdir)
        except ZygoteLost:
            self.drop(current)
            raise

    def start_background(self) -> None:
        """Start this kind's first zygote without waiting for it (`ready` tells when it serves)."""
        if self.current is None and self.standby is None and time.monotonic() >= self._retry_at:
            try:
                self.standby = self._start(self.kind)
            except (OSError, ZygoteLost):
                logger.exception('could not start a %s zygote', self.kind)
                self._retry_at = time.monotonic() + RETRY_S

    def ready(self) -> bool:
        """Whether a zygote of this kind can fork now, without waiting for one to start."""
        self._promote()
        return self.current is not None

    def _wait_standby(self) -> None:
        standby = self.standby
        assert standby is not None
        try:
            standby.wait_ready(START_TIMEOUT_S)
        except ZygoteLost:
            self.standby = None
            standby.close()
            raise
        self._promote()

    def _promote(self) -> bool:
        """Make a ready standby the current zygote; True if that happened."""
        standby = self.standby
        if standby is None:
            return False
        try:
            standby.poll()
        except ZygoteLost:
            logger.error('a new %s zygote died while starting', self.kind)
            self.standby = None
            standby.close()
            self._retry_at = time.monotonic() + RETRY_S
            return False
        if not standby.ready:
            return False
        self.standby = None
        if self.current is not None:
            self.retired.append(self.current)
        self.current = standby
        return True

    def maintain(self) -> bool:
        """Off the critical path: start a replacement when due, promote it when ready, close drained
        retired zygotes.  True when a new zygote took over (spares of the old one are then stale)."""
        current = self.current
        early = current is not None and current.due(int(EARLY * self.renew_execs), EARLY * self.renew_s)
        if current is not None and self.standby is None and early and time.monotonic() >= self._retry_at:
            try:
                self.standby = self._start(self.kind)
            except (OSError, ZygoteLost):
                logger.exception('could not start a new %s zygote; keeping the old one', self.kind)
                self._retry_at = time.monotonic() + RETRY_S
        promoted = self._promote()
        self.close_drained()
        return promoted

    def close_drained(self) -> None:
        """Close retired zygotes whose every child has been reaped."""
        for zygote in list(self.retired):
            try:
                zygote.poll()
            except ZygoteLost:
                zygote.live.clear()
            if not zygote.live:
                self.retired.remove(zygote)
                zygote.close()

    def drop(self, zygote: Zygote) -> None:
        """Forget a zygote that died; the next spare starts a new one."""
        if self.current is zygote:
            self.current = None
        if self.standby is zygote:
            self.standby = None
        if zygote in self.retired:
            self.retired.remove(zygote)
        zygote.close()

    def due_in_s(self) -> float | None:
        """Seconds until the current zygote's replacement is due to start (None: nothing to renew)."""
        if self.current is None or self.standby is not None:
            return None
        due = max(self.current.started + EARLY * self.renew_s, self._retry_at)
        return max(0.0, due - time.monotonic())

    def close(self) -> None:
        """Stop every zygote of the lineage."""
        for zygote in self.zygotes():
            zygote.close()
        self.current = self.standby = None
        self.retired = []
