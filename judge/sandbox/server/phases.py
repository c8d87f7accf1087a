"""Where the slot server's own CPU goes, phase by phase (for `scripts.sandbox_cost --phases`).

`PhaseClock.lap` charges the server thread's CPU since the previous lap to a named phase, so the
phases of one execution add up to the server's whole CPU for it.  Off unless the slot's configuration
asks for it (``phase_costs``): then every lap is a no-op call.

The slot server's phases, in the order of one execution: ``receive`` (the request), ``choose`` (the
warm parent), ``spare``, ``files`` (the work dir's files and the plan), ``execute`` (handing the plan
over to the end of the child's output), ``reply``, ``send``; then its clean-up, ``settle`` (every
process killed and reaped) and ``drop`` (the work dir); then the next spare's ``maintain`` (warm
parents' renewals), ``workdir: tmpfs`` (own namespaces: the execution's tmpfs), ``workdir``, ``pid``
(the random pid) and ``fork``; ``wait`` is the wait for a request.
"""

from __future__ import annotations

import time


class PhaseClock:
    """Thread CPU nanoseconds per phase, and how many executions they cover."""

    def __init__(self) -> None:
        self.ns: dict[str, int] = {}
        self.executions = 0
        self._last = time.thread_time_ns()

    def lap(self, phase: str) -> None:
        """Charge the CPU since the last lap to ``phase``."""
        now = time.thread_time_ns()
        self.ns[phase] = self.ns.get(phase, 0) + now - self._last
        self._last = now

    def executed(self) -> None:
        """One more execution ran."""
        self.executions += 1

    def take(self) -> dict[str, object]:
        """The totals so far (then start again from zero)."""
        totals: dict[str, object] = {'executions': self.executions, 'ns': dict(self.ns)}
        self.ns, self.executions = {}, 0
        self._last = time.thread_time_ns()
        return totals


class NoPhases(PhaseClock):
    """The clock when phase costs are off: nothing is read nor kept."""

    def __init__(self) -> None:
        self.ns = {}
        self.executions = 0

    def lap(self, phase: str) -> None:
        pass

    def executed(self) -> None:
        pass

    def take(self) -> dict[str, object]:
        return {'executions': 0, 'ns': {}}
