"""Executor base: a language is a few class attributes; its programs run through the sandbox.

A language declares its source file name, its run command line (a template), its version command
and a few limits (DMOJ style).  `Executor` is an interpreted language: **run** writes the source into
a fresh work dir and runs ``run_argv``.  A compiled language derives from
`judge.executors.compiled.CompiledExecutor`, which adds the compile step (once per node, cached).

Templates are `str.format` strings over `Executor.fields` (``{src}``, ``{memory_mb}``, ``{heap_mb}``;
``{out}`` for compiled languages...).  The first word of a command is a tool name looked up on the
sandbox's PATH (never the worker's: ``~/.cargo/bin`` is not readable by the sandbox's uids).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from judge.executors.toolchain import Toolchain, find_tool, tool_version
from judge.sandbox.client import ExecRequest, ExecResult, SlotClient
from judge.sandbox.limits import Limits

__all__ = ['ENV_TOOL', 'Compiled', 'Executor', 'RunExtras', 'Toolchain', 'find_tool', 'tool_version']

ENV_TOOL = '/usr/bin/env'


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


@dataclass(frozen=True)
class RunExtras:
    """What a request adds to a run: files in its work dir, files to read back after it, arguments."""

    files: dict[str, str] = field(default_factory=dict)
    """Relative path -> content (bytes as ``surrogateescape`` text); the source wins a clash of names."""
    fetch: tuple[str, ...] = ()
    """Relative paths read back after the run (`judge.sandbox.client.ExecResult.fetched`)."""
    args: tuple[str, ...] = ()
    """Command-line arguments of the program."""

    def request(self, limits: Limits, argv: list[str], files: dict[str, str], stdin: bytes) -> ExecRequest:
        """A fresh-process run request: ``argv`` plus the arguments, ``files`` over the extra files."""
        return ExecRequest(
            limits=limits, argv=[*argv, *self.args], files={**self.files, **files}, stdin=stdin, fetch=list(self.fetch)
        )


NO_EXTRAS = RunExtras()


class Executor:
    """Run one program of an interpreted language in the caller's slot.

    Subclasses set class attributes; override methods only for what a template cannot say.
    """

    language: ClassVar[str]
    source_name: ClassVar[str]
    """File name of the source in the work dir (template)."""
    version_argv: ClassVar[tuple[str, ...]] = ()
    """Command whose first output line is the toolchain version."""
    run_argv: ClassVar[tuple[str, ...]] = ()
    """Run command (template)."""
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

    def __init__(self, toolchain: Toolchain, slot: SlotClient) -> None:
        self.toolchain = toolchain
        self.slot = slot

    # ---- declarative parts -------------------------------------------------------------------

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

    # ---- compile and run ---------------------------------------------------------------------

    def compile(
        self, source: str, files: dict[str, str] | None = None, within_s: float | None = None
    ) -> Compiled | None:
        """Nothing to compile: `None` (`judge.executors.compiled.CompiledExecutor` compiles ``files`` with the
        source, in at most ``within_s`` seconds when given)."""
        return None

    def run(
        self,
        source: str,
        compiled: Compiled | None,
        stdin: bytes,
        limits: Limits,
        seed: int | None = None,
        extras: RunExtras = NO_EXTRAS,
    ) -> ExecResult:
        """Run the program once with ``stdin`` under ``limits`` (already this language's, `run_limits`);
        ``compiled`` is `compile`'s outcome; ``seed`` (replayable randomness) only means something to
        Python (`judge.executors.python`); ``extras`` adds files, files to read back and arguments."""
        values = self.fields(source, limits.memory_mb)
        argv = self.argv(self.run_argv, self.run_env, values)
        return self.execute(extras.request(limits, argv, {values['src']: source}, stdin))

    def execute(self, request: ExecRequest) -> ExecResult:
        """Send one request to the slot."""
        return self.slot.run(request)
