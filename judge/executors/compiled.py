"""Compiled languages: compile once per node, into the node's compile cache, then run the artifact.

* **Compile once per node.**  A compiled language builds inside the sandbox (an `ExecRequest` with
  ``exports``) into a content-addressed cache keyed by `CompiledExecutor.compile_key` (language,
  toolchain version, command line, source).  Concurrent compiles of the same source on one node wait
  for each other on an ``flock``, so it really is compiled once.  The cache is bounded
  (`Toolchain.cache_max_mb`); the least recently used entries go.
* **Only deterministic failures are cached** (`Compiled.cacheable`): a compiler diagnostic (its exit
  code is one of `CompiledExecutor.diagnostic_exit_codes`, no signal, no limit hit, no process
  refused) in a slot that accounts its limits (cgroups).  The judgement never reads the compiler's
  text, which the source controls.
* **What the source decides is its verdict.**  Any other failure (out of time, memory or processes,
  a program larger than `JUDGE_COMPILE_ARTIFACT_MB`, too much output, the compiler killed by a
  signal or ending with an unexpected status) is compiled once more in the cleaned slot, in what the
  first try left of the time limit, then tells the source's fault from the node's by compiling `control_source`,
  a tiny valid program, in the same slot under the same limits: when it compiles, the failure is the
  source's, a compile error that says which limit it hit (never cached: limits are not
  deterministic); when it does not, the node is broken and the compile is an infrastructure error
  (`SandboxError`).  A control that passed is trusted for `CONTROL_TTL_S`.
* **The cache keeps its bound when storing**: before a compile may store its program, the least
  recently used entries go until the program fits (`cache.make_room`).
* **Run** imports the cached artifact into a fresh work dir and runs ``run_argv``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import signal
import time
from typing import Any, ClassVar

from judge.executors import cache
from judge.executors.base import NO_EXTRAS, Compiled, Executor, RunExtras
from judge.sandbox.client import ExecRequest, ExecResult, SandboxError
from judge.sandbox.limits import Limits

logger = logging.getLogger('judge.executors')

COMPILE_OUTPUT_BYTES = 16 * 1024 * 1024
"""stdout+stderr of a compile step."""
MIB = 1024 * 1024
CONTROL_TTL_S = 60.0
"""How long a passed control compile (`CompiledExecutor.node_compiles`) vouches for the node."""
MIN_COMPILE_S = 1.0
"""A compile is never given less time than this, however short the wait left; a second try needs as much
left of the first one's limit (both together keep within one compile time limit, as the task's does)."""
COMPILE_PIDS = 64
"""Processes and threads of a compile step (not `JUDGE_PIDS_LIMIT`, which bounds runs)."""


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
    control_source: ClassVar[str]
    """A tiny valid program, compiled to tell a source that breaks the compiler from a broken node."""
    _control_ok_at: float = -1e9

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
            file_bytes=self.toolchain.artifact_max_mb * MIB,
            pids=COMPILE_PIDS,
            as_extra_mb=1024,
            capture_bytes=64 * 1024,
            use_rlimit_as=self.rlimit_as,
        )

    def cache_path(self, kind: str, *parts: str) -> str:
        """A content-addressed path in the node's cache, keyed by everything in ``parts``."""
        digest = hashlib.sha256('\0'.join(parts).encode('utf-8', 'surrogateescape')).hexdigest()
        return os.path.join(self.toolchain.cache_dir, kind, digest[:2], digest)

    def compile(self, source: str, files: dict[str, str] | None = None, within_s: float | None = None) -> Compiled:
        """Compile ``source`` (in at most ``within_s`` seconds when given, else the compile time limit), or
        take the cached outcome; `SandboxError` only when the node cannot compile at all (a control fails
        too).  ``files`` (relative path -> text) are put beside the source, headers or more sources
        (`source_suffixes`) compiled with it, and are part of the key."""
        limits = self.compile_limits
        if within_s is not None and within_s < limits.time_s:
            limits = limits._replace(time_s=max(MIN_COMPILE_S, within_s))
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
            self._make_room()
            compiled = self._compile_in_sandbox(source, artifact, limits, files)
            left_s = limits.time_s - compiled.wall_s
            if not (compiled.ok or compiled.diagnostic or compiled.over_time) and left_s >= MIN_COMPILE_S:
                # out of memory or processes, killed...: once more, in the cleaned slot, in the time left
                logger.warning('%s compile failed (%s); compiling once more', self.language, _why(compiled))
                compiled = self._compile_in_sandbox(source, artifact, limits._replace(time_s=left_s), files)
            if not (compiled.ok or compiled.diagnostic):
                if not self.node_compiles():
                    raise SandboxError(f'{self.language} compile failed, and so did a control: {_why(compiled)}')
                logger.info('%s compile failed because of the source: %s', self.language, _why(compiled))
            if compiled.cacheable:
                cache.write_record(artifact, compiled.ok, compiled.stderr, compiled.wall_s)
        return compiled

    def node_compiles(self) -> bool:
        """Whether `control_source` compiles in this slot now (a pass is trusted for `CONTROL_TTL_S`)."""
        now = time.monotonic()
        if now - self._control_ok_at < CONTROL_TTL_S:
            return True
        scratch = self.cache_path('control', self.language, str(os.getpid()), str(now))
        try:
            ok = self._compile_in_sandbox(self.control_source, scratch, self.compile_limits).ok
        except SandboxError:
            ok = False
        finally:
            for path in (scratch, scratch + '.tmp'):
                with contextlib.suppress(OSError):
                    os.unlink(path)
        if ok:
            self._control_ok_at = now
        return ok

    def _compile_in_sandbox(
        self, source: str, artifact: str, limits: Limits, files: dict[str, str] | None = None
    ) -> Compiled:
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
        if not ok:  # first: a result keeps the head of the compiler's text
            stderr = _limit_note(result, limits, self.diagnostic_exit_codes) + stderr
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

    def _make_room(self) -> None:
        """Evict least recently used entries until one more program of the largest size fits the cache bound."""
        bound = self.toolchain.cache_max_mb * MIB
        try:
            cache.make_room(self.toolchain.cache_dir, bound, self.toolchain.artifact_max_mb * MIB, keep=('pch',))
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


def _limit_note(result: ExecResult, limits: Limits, diagnostic_exit_codes: tuple[int, ...]) -> bytes:
    """What a failed compile ran into, from what the sandbox measured (put before the compiler's text)."""
    if result.timed_out:
        return f'compilation exceeded the time limit ({limits.time_s:g}s)\n'.encode()
    if result.memory_exceeded:
        return f'compilation exceeded the memory limit ({limits.memory_mb} MiB)\n'.encode()
    if result.output_exceeded:
        return b'compilation printed too much\n'
    if result.pids_exceeded:
        return f'compilation exceeded the process limit ({limits.pids})\n'.encode()
    if result.signal == signal.SIGXFSZ:
        return f'compilation wrote a file larger than {limits.file_bytes // MIB} MiB\n'.encode()
    if result.signal is not None:
        return f'the compiler was killed by signal {result.signal}\n'.encode()
    if result.exit_code not in diagnostic_exit_codes:
        return f'the compiler failed (exit status {result.exit_code})\n'.encode()
    return b''
