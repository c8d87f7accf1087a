"""Per-execution limits and the rlimits a forked child applies to itself."""

from __future__ import annotations

import math
import resource
from typing import Any, NamedTuple


class Limits(NamedTuple):
    """Resource limits of one execution.

    ``time_s`` is the wall-clock limit enforced by the slot server; the CPU rlimit is derived from
    it.  ``memory_mb`` is enforced by the slot's memory cgroup when there is one, else by
    ``RLIMIT_AS`` (plus ``as_extra_mb`` of headroom for interpreters).  ``output_bytes`` bounds
    stdout+stderr together; ``capture_bytes`` is how much of each stream is kept for the answer.
    The fields without a default are the caller's: the worker builds its run limits from the judge's
    settings, where their defaults live (`judge.worker.service.run_limits`); a compile has its own.
    """

    time_s: float
    memory_mb: int
    output_bytes: int
    file_bytes: int
    pids: int
    capture_bytes: int = 64 * 1024
    nofile: int = 256
    as_extra_mb: int = 128
    use_rlimit_as: bool = True

    def capturing(self, stream_bytes: int) -> Limits:
        """These limits, keeping at least ``stream_bytes`` of each stream (at most ``output_bytes``)."""
        return self._replace(capture_bytes=min(max(self.capture_bytes, stream_bytes), self.output_bytes))

    def within(self, time_s: float | None = None, memory_mb: int | None = None) -> Limits:
        """These limits, lowered to a request's own ``time_s`` and ``memory_mb`` where given: a request
        may ask for less than the node's limits, never for more."""
        limits = self
        if time_s is not None and 0 < time_s < limits.time_s:
            limits = limits._replace(time_s=time_s)
        if memory_mb is not None and 0 < memory_mb < limits.memory_mb:
            limits = limits._replace(memory_mb=memory_mb)
        return limits

    def whole(self) -> Limits:
        """These limits, keeping each stream whole up to the output limit (not just its head)."""
        return self._replace(capture_bytes=self.output_bytes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able copy: how an execution's limits travel to the slot server (`judge.sandbox.client`)."""
        return self._asdict()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Limits:
        """The slot server's parse of `to_dict`'s copy (unknown keys ignored; the fields without a default required)."""
        return cls(**{k: v for k, v in data.items() if k in _FIELD_NAMES})


_FIELD_NAMES = frozenset(Limits._fields)


def rlimits(limits: Limits, *, set_nproc: bool, nproc_slack: int = 0) -> list[tuple[int, int, int]]:
    """The (resource, soft, hard) triples an execution runs under (JSON-able for the child's plan).

    ``RLIMIT_CORE`` is not among them: the warm parent sets it for all its children, and the seccomp
    filter refuses to change it (`judge.sandbox.kernel.coredump`).

    ``nproc_slack`` raises ``RLIMIT_NPROC`` above ``limits.pids`` where a pids cgroup is the real
    bound: the cgroup then refuses first and counts it (`judge.sandbox.kernel.cgroups.SlotCgroup.fork_refusals`).
    """
    # Strictly above the wall limit: a spare's set-up before its plan counts toward RLIMIT_CPU, so a
    # soft limit equal to ``time_s`` ended CPU-bound programs a few ms short of their time.  The wall
    # limit ends them; this bounds a program whose threads burn CPU faster than the clock.
    cpu_s = math.floor(limits.time_s) + 1
    out = [
        (resource.RLIMIT_CPU, cpu_s, cpu_s + 1),
        (resource.RLIMIT_FSIZE, limits.file_bytes, limits.file_bytes),
        (resource.RLIMIT_NOFILE, limits.nofile, limits.nofile),
    ]
    if set_nproc:
        out.append((resource.RLIMIT_NPROC, limits.pids + nproc_slack, limits.pids + nproc_slack))
    if limits.use_rlimit_as:
        as_bytes = (limits.memory_mb + limits.as_extra_mb) * 1024 * 1024
        out.append((resource.RLIMIT_AS, as_bytes, as_bytes))
    return out
