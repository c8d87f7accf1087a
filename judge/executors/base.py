"""Executor base: a language is a few class attributes; compile and run go through the sandbox.

A language declares its source file name, its compile and run command lines (templates), its
version command and a few limits (DMOJ style); everything else lives here and in
`judge.executors.compiling` (compile once per node, cache only what the source decides).  **Run**
imports the cached artifact (or writes the source) into a fresh work dir and runs ``run_argv``.

Templates are `str.format` strings over `Executor.fields` (``{src}``, ``{out}``, ``{memory_mb}``,
``{heap_mb}``...).  The first word of a command is a tool name looked up on the sandbox's PATH
(never the worker's: ``~/.cargo/bin`` is not readable by the sandbox's uids).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from typing import Any, ClassVar

from judge.executors.compiling import Compiled, compile_once
from judge.executors.toolchain import Toolchain, find_tool, tool_version
from judge.sandbox.client import ExecRequest, ExecResult, SlotClient
from judge.sandbox.limits import Limits

__all__ = ['ENV_TOOL', 'Compiled', 'Executor', 'Toolchain', 'find_tool', 'tool_version']

ENV_TOOL = '/usr/bin/env'
COMPILE_OUTPUT_BYTES = 16 * 1024 * 1024
"""stdout+stderr of a compile step."""
COMPILE_FILE_BYTES = 256 * 1024 * 1024
"""Largest file a compile step may write (the artifact)."""
COMPILE_PIDS = 64
"""Processes and threads of a compile step (not `JUDGE_PIDS_LIMIT`, which bounds runs)."""


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
        """Path of a tool, found on the sandbox's PATH (subclasses name their toolchain's own)."""
        return find_tool(name)

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
        """The node's run limits adjusted for this language (`judge.worker.runner.Runner` asks once per language)."""
        return limits._replace(
            as_extra_mb=self.as_extra_mb,
            use_rlimit_as=limits.use_rlimit_as and self.rlimit_as,
            pids=limits.pids if self.pids is None else self.pids,
        )

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

    def compile(self, source: str) -> Compiled | None:
        """Compile ``source`` once per node (cached); `None` for interpreted languages."""
        return compile_once(self, source) if self.compiled else None

    # ---- run ---------------------------------------------------------------------------------

    def run(
        self, source: str, compiled: Compiled | None, stdin: bytes, limits: Limits, seed: int | None = None
    ) -> ExecResult:
        """Run the program once with ``stdin`` under ``limits`` (already this language's, `run_limits`);
        ``seed`` (replayable randomness) only means something to Python (`judge.executors.python`)."""
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
