"""Executor base: a language is a few class attributes; compile and run go through the sandbox.

A language declares its source file name, its compile and run command lines (templates), its
version command and a few limits (DMOJ style); everything else lives here:

* **Compile once per node.**  A compiled language builds inside the sandbox (an `ExecRequest` with
  ``exports``) into a content-addressed cache keyed by language, toolchain version, command line and
  source.  Concurrent compiles of the same source on one node wait for each other on an ``flock``,
  so it really is compiled once.  The cache is bounded (`Toolchain.cache_max_mb`); the least
  recently used entries go.
* **Only deterministic failures are cached** (`Compiled.cacheable`): a compiler diagnostic (its
  exit code is one of `Executor.diagnostic_exit_codes`, no signal, no limit hit, no process refused)
  in a slot that accounts its limits (cgroups).  Any other failure (out of memory, out of processes,
  printed too much, died of a signal...) is compiled once more in the cleaned slot and, failing
  again, is an infrastructure error (`SandboxError`), never the solution's fault; so is a compile
  that ran out of time, at once (a second try would not fit the task's time limit).  The judgement
  never reads the compiler's text, which the source controls.
* **Run** imports the cached artifact into a fresh work dir and runs ``run_argv``.

Templates are `str.format` strings over `Executor.fields` (``{src}``, ``{out}``, ``{memory_mb}``,
``{heap_mb}``...).  The first word of a command is a tool name looked up on the sandbox's PATH
(never the worker's: ``~/.cargo/bin`` is not readable by the sandbox's uids).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from judge.executors import cache
from judge.sandbox.client import ExecRequest, ExecResult, SandboxError, SlotClient
from judge.sandbox.limits import Limits

logger = logging.getLogger('judge.executors')

SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin'
"""The PATH user code and compilers see (`judge.sandbox.jail.SAFE_PATH`)."""
ENV_TOOL = '/usr/bin/env'
_EVICT_EVERY_S = 60.0


@dataclass
class Toolchain:
    """Where the compilers and interpreters are and how the node runs them."""

    python: str
    cxx: str
    python_mode: str = 'warm'
    cache_dir: str = '/var/cache/judge'
    compile_time_s: float = 30.0
    compile_memory_mb: int = 1024
    cache_max_mb: int = 2048
    """Size bound of the compile cache (artifacts of all languages); least recently used go first."""
    tools: dict[str, str] = field(default_factory=dict)
    """Explicit paths of tools by name (e.g. ``{'javac': '/opt/jdk/bin/javac'}``); else found on PATH."""
    runtime: str = ''
    """Digest of the submission runtime (`judge.runtime.RuntimeInfo.digest`), named in every result."""


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


@functools.lru_cache(maxsize=32)
def tool_version(argv: tuple[str, ...]) -> str:
    """First line of a tool's version output, cached per process ('' when it cannot run)."""
    try:
        out = subprocess.run(list(argv), capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ''
    text = (out.stdout or out.stderr).decode(errors='replace').strip()
    return text.splitlines()[0] if text else ''


@functools.lru_cache(maxsize=64)
def find_tool(name: str) -> str:
    """Absolute, symlink-free path of ``name`` on the sandbox's PATH (``name`` itself when absent)."""
    if os.path.isabs(name):
        return name
    found = shutil.which(name, path=SANDBOX_PATH)
    return os.path.realpath(found) if found else name


class Executor:
    """Compile (optionally) and run one program in the caller's slot.

    Subclasses set class attributes; override methods only for what a template cannot say.
    """

    language: ClassVar[str]
    source_name: ClassVar[str]
    """File name of the source in the work dir (template)."""
    version_argv: ClassVar[tuple[str, ...]] = ()
    """Command whose first output line is the toolchain version."""
    compile_argv: ClassVar[tuple[str, ...]] = ()
    """Compile command (template); empty for interpreted languages."""
    run_argv: ClassVar[tuple[str, ...]] = ()
    """Run command (template)."""
    artifact_name: ClassVar[str] = 'run'
    """What the compile step leaves in the work dir; exported to the cache, imported to run."""
    compile_env: ClassVar[dict[str, str]] = {}
    """Extra environment of the compile step (template), on top of the sandbox's clean one."""
    run_env: ClassVar[dict[str, str]] = {}
    """Extra environment of the run step (template)."""
    pids: ClassVar[int | None] = None
    """Processes+threads of one run; None keeps the node's limit."""
    as_extra_mb: ClassVar[int] = 64
    """Address-space headroom over the memory limit where ``RLIMIT_AS`` enforces memory (`uid` tier)."""
    rlimit_as: ClassVar[bool] = True
    """False for runtimes that reserve huge address space (JVM, V8): then only the cgroup bounds memory."""
    oom_markers: ClassVar[tuple[str, ...]] = ()
    """stderr texts by which the runtime reports running out of memory."""
    heap_percent: ClassVar[int] = 75
    """``{heap_mb}``: the share of the memory limit a managed runtime may use for its heap."""
    diagnostic_exit_codes: ClassVar[tuple[int, ...]] = (1,)
    """Exit codes by which the compiler reports errors in the source (anything else is not the source's)."""

    def __init__(self, toolchain: Toolchain, slot: SlotClient) -> None:
        self.toolchain = toolchain
        self.slot = slot

    # ---- declarative parts -------------------------------------------------------------------

    @property
    def compiled(self) -> bool:
        """Whether this language has a compile step."""
        return bool(self.compile_argv)

    def tool(self, name: str) -> str:
        """Path of a tool: the toolchain's explicit one, else found on the sandbox's PATH."""
        return self.toolchain.tools.get(name) or find_tool(name)

    def version(self) -> str:
        """The toolchain version reported in results and `/status`."""
        if not self.version_argv:
            return ''
        return tool_version((self.tool(self.version_argv[0]), *self.version_argv[1:]))

    def fields(self, source: str, memory_mb: int) -> dict[str, Any]:
        """Values of the template fields for one source and memory limit."""
        return {
            'src': self.source_file(source),
            'out': self.artifact_name,
            'memory_mb': memory_mb,
            'heap_mb': max(16, memory_mb * self.heap_percent // 100),
        }

    def source_file(self, source: str) -> str:
        """The source's file name in the work dir."""
        return self.source_name

    def argv(self, template: tuple[str, ...], env: dict[str, str], values: dict[str, Any]) -> list[str]:
        """Render a command template; extra environment goes through ``env``."""
        argv = [part.format(**values) for part in template]
        argv[0] = self.tool(argv[0])
        if env:
            argv = [ENV_TOOL, *(f'{k}={v.format(**values)}' for k, v in env.items()), *argv]
        return argv

    def run_limits(self, limits: Limits) -> Limits:
        """The runner's limits adjusted for this language."""
        data = limits.to_dict()
        data['as_extra_mb'] = self.as_extra_mb
        data['use_rlimit_as'] = limits.use_rlimit_as and self.rlimit_as
        if self.pids is not None:
            data['pids'] = self.pids
        return Limits.from_dict(data)

    def is_oom(self, stderr: str) -> bool:
        """Whether stderr shows the runtime's own out-of-memory failure."""
        ends = stderr[:4000] + '\n' + stderr[-4000:]  # Go reports first, then dumps every goroutine
        return any(marker in ends for marker in self.oom_markers)

    # ---- compile -----------------------------------------------------------------------------

    def compile_key(self, source: str) -> tuple[str, ...]:
        """Everything the artifact depends on."""
        return (self.language, self.version(), '\0'.join(self.compile_argv), json.dumps(self.compile_env), source)

    def extra_compile_args(self, source: str) -> list[str]:
        """Arguments appended to the compile command that do not change the artifact (e.g. a PCH dir)."""
        return []

    def compile_limits(self) -> Limits:
        """Limits of the compile step."""
        return Limits(
            time_s=self.toolchain.compile_time_s,
            memory_mb=self.toolchain.compile_memory_mb,
            as_extra_mb=1024,
            capture_bytes=64 * 1024,
            file_bytes=256 * 1024 * 1024,
            use_rlimit_as=self.rlimit_as,
        )

    def compile(self, source: str) -> Compiled | None:
        """Compile ``source`` once per node (cached); `None` for interpreted languages."""
        if not self.compiled:
            return None
        artifact = self.cache_path(self.language, *self.compile_key(source))
        cached = self._cached(artifact)
        if cached is not None:
            return cached
        with cache.locked(artifact):
            cached = self._cached(artifact)  # another slot compiled it while we waited
            if cached is not None:
                return cached
            compiled = self._compile_in_sandbox(source, artifact)
            if not (compiled.ok or compiled.diagnostic or compiled.over_time):
                # out of memory or processes, killed...: once more, in the cleaned slot (a compile that ran
                # out of time would not fit a second time in the task's time limit)
                logger.warning('%s compile failed (%s); compiling once more', self.language, _why(compiled))
                compiled = self._compile_in_sandbox(source, artifact)
            if not (compiled.ok or compiled.diagnostic):
                raise SandboxError(f'{self.language} compile failed, not because of the source: {_why(compiled)}')
            if compiled.cacheable:
                self._write_meta(artifact, compiled)
        self._maybe_evict()
        return compiled

    def _compile_in_sandbox(self, source: str, artifact: str) -> Compiled:
        limits = self.compile_limits()
        values = self.fields(source, limits.memory_mb)
        argv = [*self.argv(self.compile_argv, self.compile_env, values), *self.extra_compile_args(source)]
        result = self.execute(
            ExecRequest(
                limits=limits,
                argv=argv,
                files={values['src']: source},
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

    def _cached(self, artifact: str) -> Compiled | None:
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

    @staticmethod
    def _write_meta(artifact: str, compiled: Compiled) -> None:
        cache.write_record(artifact, compiled.ok, compiled.stderr, compiled.wall_s)

    _last_evict: ClassVar[float] = 0.0

    def _maybe_evict(self) -> None:
        """Keep the compile cache under its size bound (checked at most once a minute per process)."""
        now = time.monotonic()
        if now - Executor._last_evict < _EVICT_EVERY_S:
            return
        Executor._last_evict = now
        try:
            cache.evict(self.toolchain.cache_dir, self.toolchain.cache_max_mb * 1024 * 1024, keep=('pch',))
        except OSError:
            logger.exception('compile cache eviction failed')

    # ---- run ---------------------------------------------------------------------------------

    def run(
        self, source: str, compiled: Compiled | None, stdin: bytes, limits: Limits, seed: int | None = None
    ) -> ExecResult:
        """Run the program once with ``stdin``; ``seed`` (replayable randomness) only means something to
        Python (`judge.executors.python`)."""
        limits = self.run_limits(limits)
        values = self.fields(source, limits.memory_mb)
        argv = self.argv(self.run_argv, self.run_env, values)
        if compiled is not None:
            assert compiled.artifact is not None
            return self.execute(
                ExecRequest(limits=limits, argv=argv, imports={self.artifact_name: compiled.artifact}, stdin=stdin)
            )
        return self.execute(ExecRequest(limits=limits, argv=argv, files={values['src']: source}, stdin=stdin))

    def cache_path(self, kind: str, *parts: str) -> str:
        """A content-addressed path in the node's cache, keyed by everything in ``parts``."""
        digest = hashlib.sha256('\0'.join(parts).encode('utf-8', 'surrogateescape')).hexdigest()
        return os.path.join(self.toolchain.cache_dir, kind, digest[:2], digest)

    def execute(self, request: ExecRequest) -> ExecResult:
        """Send one request to the slot."""
        return self.slot.run(request)


def _why(compiled: Compiled) -> str:
    tail = compiled.stderr[-300:].decode('utf-8', 'replace').strip().splitlines()
    return tail[-1] if tail else 'no message'
