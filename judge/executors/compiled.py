"""Compiled languages: compile once per node, into the node's compile cache, then run the artifact.

* **Compile once per node.**  A compiled language builds inside the sandbox (an `ExecRequest` with
  ``exports``) into a content-addressed cache keyed by `CompiledExecutor.compile_key` (language,
  toolchain version, command line, source).  Concurrent compiles of the same source on one node wait
  for each other on an ``flock``, so it really is compiled once.  The cache is bounded
  (`Toolchain.cache_max_mb`); the least recently used entries go.
* **Only deterministic failures are cached** (`Compiled.cacheable`): a compiler diagnostic (its exit
  code is one of `CompiledExecutor.diagnostic_exit_codes`, no signal, no limit hit, no process
  refused) in a slot that accounts its limits (cgroups).  Any other failure (out of memory, out of
  processes, printed too much, died of a signal...) is compiled once more in the cleaned slot and,
  failing again, is an infrastructure error (`SandboxError`), never the solution's fault; so is a
  compile that ran out of time, at once (a second try would not fit the task's time limit).  The
  judgement never reads the compiler's text, which the source controls.
* **Run** imports the cached artifact into a fresh work dir and runs ``run_argv``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import time
from typing import Any, ClassVar

from judge.executors import cache
from judge.executors.base import NO_EXTRAS, Compiled, Executor, RunExtras
from judge.sandbox.client import ExecRequest, ExecResult, SandboxError
from judge.sandbox.limits import Limits

logger = logging.getLogger('judge.executors')

COMPILE_OUTPUT_BYTES = 16 * 1024 * 1024
"""stdout+stderr of a compile step."""
COMPILE_FILE_BYTES = 256 * 1024 * 1024
"""Largest file a compile step may write (the artifact)."""
COMPILE_PIDS = 64
"""Processes and threads of a compile step (not `JUDGE_PIDS_LIMIT`, which bounds runs)."""
_EVICT_EVERY_S = 60.0
_last_evict = 0.0


class CompiledExecutor(Executor):
    """Compile a program once per node (cached), then run its artifact in the caller's slot."""

    compile_argv: ClassVar[tuple[str, ...]]
    """Compile command (template)."""
    artifact_name: ClassVar[str] = 'run'
    """What the compile step leaves in the work dir (``{out}``); exported to the cache, imported to run."""
    compile_env: ClassVar[dict[str, str]] = {}
    """Extra environment of the compile step (template), on top of the sandbox's clean one."""
    diagnostic_exit_codes: ClassVar[tuple[int, ...]] = (1,)
    """Exit codes by which the compiler reports errors in the source (anything else is not the source's)."""
    source_suffixes: ClassVar[tuple[str, ...]] = ()
    """A compile's extra files (`compile`'s ``files``) with these suffixes are compiled with the program."""

    def fields(self, source: str, memory_mb: int) -> dict[str, Any]:
        return {**super().fields(source, memory_mb), 'out': self.artifact_name}

    def compile_key(self, source: str) -> tuple[str, ...]:
        """Everything the artifact depends on."""
        return (self.language, self.version(), '\0'.join(self.compile_argv), json.dumps(self.compile_env), source)

    def extra_compile_args(self, source: str) -> list[str]:
        """Arguments appended to the compile command that do not change the artifact (e.g. a PCH dir)."""
        return []

    @functools.cached_property
    def compile_limits(self) -> Limits:
        """Limits of the compile step (built once per executor): the toolchain's time and memory
        (`JUDGE_COMPILE_TIME_LIMIT`, `JUDGE_COMPILE_MEMORY_MB`), fixed bounds for the rest."""
        return Limits(
            time_s=self.toolchain.compile_time_s,
            memory_mb=self.toolchain.compile_memory_mb,
            output_bytes=COMPILE_OUTPUT_BYTES,
            file_bytes=COMPILE_FILE_BYTES,
            pids=COMPILE_PIDS,
            as_extra_mb=1024,
            capture_bytes=64 * 1024,
            use_rlimit_as=self.rlimit_as,
        )

    def cache_path(self, kind: str, *parts: str) -> str:
        """A content-addressed path in the node's cache, keyed by everything in ``parts``."""
        digest = hashlib.sha256('\0'.join(parts).encode('utf-8', 'surrogateescape')).hexdigest()
        return os.path.join(self.toolchain.cache_dir, kind, digest[:2], digest)

    def compile(self, source: str, files: dict[str, str] | None = None) -> Compiled:
        """Compile ``source``, or take the cached outcome; `SandboxError` when the compile failed twice
        for a reason that is not the source's.  ``files`` (relative path -> text) are put beside the
        source, headers or more sources (`source_suffixes`) compiled with it, and are part of the key."""
        key = self.compile_key(source)
        if files:
            key = (*key, json.dumps(sorted(files.items())))
        artifact = self.cache_path(self.language, *key)
        cached = _cached(artifact)
        if cached is not None:
            return cached
        with cache.locked(artifact):
            cached = _cached(artifact)  # another slot compiled it while we waited
            if cached is not None:
                return cached
            compiled = self._compile_in_sandbox(source, artifact, files)
            if not (compiled.ok or compiled.diagnostic or compiled.over_time):
                # out of memory or processes, killed...: once more, in the cleaned slot (a compile that ran
                # out of time would not fit a second time in the task's time limit)
                logger.warning('%s compile failed (%s); compiling once more', self.language, _why(compiled))
                compiled = self._compile_in_sandbox(source, artifact, files)
            if not (compiled.ok or compiled.diagnostic):
                raise SandboxError(f'{self.language} compile failed, not because of the source: {_why(compiled)}')
            if compiled.cacheable:
                cache.write_record(artifact, compiled.ok, compiled.stderr, compiled.wall_s)
        self._maybe_evict()
        return compiled

    def _compile_in_sandbox(self, source: str, artifact: str, files: dict[str, str] | None = None) -> Compiled:
        limits = self.compile_limits
        values = self.fields(source, limits.memory_mb)
        sources = sorted(name for name in files or {} if name.endswith(self.source_suffixes) and self.source_suffixes)
        argv = [*self.argv(self.compile_argv, self.compile_env, values), *sources, *self.extra_compile_args(source)]
        result = self.execute(
            ExecRequest(
                limits=limits,
                argv=argv,
                files={**(files or {}), values['src']: source},
                exports={self.artifact_name: artifact},
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
            not ok and not limit_hit and not result.pids_exceeded and result.exit_code in self.diagnostic_exit_codes
        )
        accounted = bool(self.slot.detail.get('cgroup'))  # limits accounted: a refused fork would show
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

    def _maybe_evict(self) -> None:
        """Keep the compile cache under its size bound (checked at most once a minute per process)."""
        global _last_evict
        now = time.monotonic()
        if now - _last_evict < _EVICT_EVERY_S:
            return
        _last_evict = now
        try:
            cache.evict(self.toolchain.cache_dir, self.toolchain.cache_max_mb * 1024 * 1024, keep=('pch',))
        except OSError:
            logger.exception('compile cache eviction failed')

    def run(
        self,
        source: str,
        compiled: Compiled | None,
        stdin: bytes,
        limits: Limits,
        seed: int | None = None,
        extras: RunExtras = NO_EXTRAS,
    ) -> ExecResult:
        """Run the compiled artifact once with ``stdin`` under ``limits`` (``compiled``: `compile`'s success)."""
        assert compiled is not None and compiled.artifact is not None
        argv = self.argv(self.run_argv, self.run_env, self.fields(source, limits.memory_mb))
        request = extras.request(limits, argv, {}, stdin)
        request.imports = {self.artifact_name: compiled.artifact}
        return self.execute(request)


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


def _why(compiled: Compiled) -> str:
    tail = compiled.stderr[-300:].decode('utf-8', 'replace').strip().splitlines()
    return tail[-1] if tail else 'no message'
