"""Executor base: a language is a few class attributes; compile and run go through the sandbox."""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
from dataclasses import dataclass
from typing import ClassVar

from judge.sandbox.client import ExecRequest, ExecResult, SlotClient
from judge.sandbox.limits import Limits


@dataclass
class Toolchain:
    """Where the compilers and interpreters are and how the node runs them."""

    python: str
    cxx: str
    python_mode: str = 'warm'
    cache_dir: str = '/var/cache/judge'
    compile_time_s: float = 30.0
    compile_memory_mb: int = 1024


@dataclass
class Compiled:
    """A compile step's outcome; ``artifact`` is the cached binary when it succeeded."""

    ok: bool
    cached: bool
    stderr: bytes = b''
    wall_s: float = 0.0
    artifact: str | None = None
    timed_out: bool = False


@functools.lru_cache(maxsize=16)
def tool_version(argv: tuple[str, ...]) -> str:
    """First line of a tool's version output, cached per process ('' when it cannot run)."""
    try:
        out = subprocess.run(list(argv), capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ''
    text = (out.stdout or out.stderr).decode(errors='replace').strip()
    return text.splitlines()[0] if text else ''


class Executor:
    """Compile (optionally) and run one program in the caller's slot."""

    language: ClassVar[str]
    source_name: ClassVar[str]
    compiled: ClassVar[bool] = False

    def __init__(self, toolchain: Toolchain, slot: SlotClient) -> None:
        self.toolchain = toolchain
        self.slot = slot

    def version(self) -> str:
        """The toolchain version reported in results and `/status`."""
        return ''

    def compile(self, source: str) -> Compiled | None:
        """Compile ``source``; `None` for interpreted languages."""
        return None

    def run(self, source: str, compiled: Compiled | None, stdin: bytes, limits: Limits) -> ExecResult:
        """Run the program once with ``stdin``."""
        raise NotImplementedError

    def cache_path(self, kind: str, *parts: str) -> str:
        """A content-addressed path in the node's cache, keyed by everything in ``parts``."""
        digest = hashlib.sha256('\0'.join(parts).encode('utf-8', 'surrogateescape')).hexdigest()
        return os.path.join(self.toolchain.cache_dir, kind, digest[:2], digest)

    def execute(self, request: ExecRequest) -> ExecResult:
        """Send one request to the slot."""
        return self.slot.run(request)
