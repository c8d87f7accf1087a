"""The node's toolchain settings, and finding the tools the sandbox runs and what they can do."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass

SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin'
"""The PATH user code and compilers see (`judge.sandbox.server.tiers.SAFE_PATH`)."""


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
    artifact_max_mb: int = 64
    """Largest file a compile may write: the compiled program is a compile error beyond it."""
    runtime: str = ''
    """Digest of the submission runtime (`judge.runtime.RuntimeInfo.digest`), named in every result."""


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


@functools.lru_cache(maxsize=4)
def can_link_static(cc: str) -> bool:
    """Whether the C or C++ compiler ``cc`` has a static libc (then binaries are linked statically)."""
    try:
        out = subprocess.run([cc, '-print-file-name=libc.a'], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return os.path.isabs(out.stdout.decode().strip())
