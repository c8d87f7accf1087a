"""The compile step of a compiled language: once per node, into the node's compile cache.

* **Compile once per node.**  A compiled language builds inside the sandbox (an `ExecRequest` with
  ``exports``) into a content-addressed cache keyed by `Executor.compile_key` (language, toolchain
  version, command line, source).  Concurrent compiles of the same source on one node wait for each
  other on an ``flock``, so it really is compiled once.  The cache is bounded
  (`Toolchain.cache_max_mb`); the least recently used entries go.
* **Only deterministic failures are cached** (`Compiled.cacheable`): a compiler diagnostic (its exit
  code is one of `Executor.diagnostic_exit_codes`, no signal, no limit hit, no process refused) in a
  slot that accounts its limits (cgroups).  Any other failure (out of memory, out of processes,
  printed too much, died of a signal...) is compiled once more in the cleaned slot and, failing
  again, is an infrastructure error (`SandboxError`), never the solution's fault; so is a compile
  that ran out of time, at once (a second try would not fit the task's time limit).  The judgement
  never reads the compiler's text, which the source controls.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from judge.executors import cache
from judge.sandbox.client import ExecRequest, SandboxError

if TYPE_CHECKING:
    from judge.executors.base import Executor
    from judge.executors.toolchain import Toolchain

logger = logging.getLogger('judge.executors')

_EVICT_EVERY_S = 60.0
_last_evict = 0.0


@dataclass
class Compiled:
    """A compile step's outcome; ``artifact`` is the cached binary when it succeeded."""

    ok: bool
    cached: bool
    stderr: bytes = b''
    wall_s: float = 0.0
    artifact: str | None = None
    timed_out: bool = False
    """The compile hit its time or memory limit."""
    cacheable: bool = False
    """Deterministic (a success, or a compiler diagnostic): other submissions of the source may reuse it."""
    diagnostic: bool = False
    """A failure the compiler reported about the source (by exit code, with no limit hit, nothing refused)."""
    over_time: bool = False
    """The compile ran out of its wall-clock time."""


def compile_once(executor: Executor, source: str) -> Compiled:
    """Compile ``source`` with ``executor``, or take the cached outcome; `SandboxError` when the
    compile failed twice for a reason that is not the source's."""
    artifact = executor.cache_path(executor.language, *executor.compile_key(source))
    cached = _cached(artifact)
    if cached is not None:
        return cached
    with cache.locked(artifact):
        cached = _cached(artifact)  # another slot compiled it while we waited
        if cached is not None:
            return cached
        compiled = _compile_in_sandbox(executor, source, artifact)
        if not (compiled.ok or compiled.diagnostic or compiled.over_time):
            # out of memory or processes, killed...: once more, in the cleaned slot (a compile that ran
            # out of time would not fit a second time in the task's time limit)
            logger.warning('%s compile failed (%s); compiling once more', executor.language, _why(compiled))
            compiled = _compile_in_sandbox(executor, source, artifact)
        if not (compiled.ok or compiled.diagnostic):
            raise SandboxError(f'{executor.language} compile failed, not because of the source: {_why(compiled)}')
        if compiled.cacheable:
            cache.write_record(artifact, compiled.ok, compiled.stderr, compiled.wall_s)
    _maybe_evict(executor.toolchain)
    return compiled


def _compile_in_sandbox(executor: Executor, source: str, artifact: str) -> Compiled:
    limits = executor.compile_limits
    values = executor.fields(source, limits.memory_mb)
    argv = [*executor.argv(executor.compile_argv, executor.compile_env, values), *executor.extra_compile_args(source)]
    result = executor.execute(
        ExecRequest(
            limits=limits,
            argv=argv,
            files={values['src']: source},
            exports={executor.artifact_name: artifact},
        )
    )
    ok = result.exit_code == 0 and not result.timed_out and os.path.isfile(artifact)
    stderr = result.stderr + (result.stdout if result.exit_code != 0 else b'')  # javac reports on stdout
    limit_hit = result.timed_out or result.memory_exceeded or result.output_exceeded
    if result.timed_out:
        stderr += f'\ncompilation exceeded {limits.time_s:g}s'.encode()
    elif result.memory_exceeded:
        stderr += f'\ncompilation exceeded {limits.memory_mb} MiB'.encode()
    elif result.output_exceeded:
        stderr += b'\ncompilation printed too much'
    # Whether the failure is the compiler's verdict on the source is decided from what the sandbox
    # measured, never from the compiler's text (the source can make it print anything).
    diagnostic = (
        not ok and not limit_hit and not result.pids_exceeded and result.exit_code in executor.diagnostic_exit_codes
    )
    accounted = bool(executor.slot.detail.get('cgroup'))  # limits accounted: a refused fork would show
    return Compiled(
        ok=ok,
        cached=False,
        stderr=stderr,
        wall_s=result.wall_s,
        artifact=artifact if ok else None,
        timed_out=result.timed_out or result.memory_exceeded,
        cacheable=ok or (diagnostic and accounted),
        diagnostic=diagnostic,
        over_time=result.timed_out,
    )


def _cached(artifact: str) -> Compiled | None:
    """The cached outcome of a compile, if there is one (touching it for the LRU bound)."""
    record = cache.read_record(artifact)
    if record is None:
        return None
    ok = bool(record.get('ok'))
    return Compiled(
        ok=ok,
        cached=True,
        stderr=str(record.get('stderr', '')).encode('utf-8', 'surrogateescape'),
        wall_s=float(record.get('wall_s', 0.0)),
        artifact=artifact if ok else None,
    )


def _maybe_evict(toolchain: Toolchain) -> None:
    """Keep the compile cache under its size bound (checked at most once a minute per process)."""
    global _last_evict
    now = time.monotonic()
    if now - _last_evict < _EVICT_EVERY_S:
        return
    _last_evict = now
    try:
        cache.evict(toolchain.cache_dir, toolchain.cache_max_mb * 1024 * 1024, keep=('pch',))
    except OSError:
        logger.exception('compile cache eviction failed')


def _why(compiled: Compiled) -> str:
    tail = compiled.stderr[-300:].decode('utf-8', 'replace').strip().splitlines()
    return tail[-1] if tail else 'no message'
