"""C++: compiled once per node inside the sandbox (content-addressed cache), then run."""

from __future__ import annotations

import functools
import os
import subprocess

from judge.executors.base import Compiled, Executor, tool_version
from judge.sandbox.client import ExecRequest, ExecResult
from judge.sandbox.limits import Limits

BINARY = 'run'


@functools.lru_cache(maxsize=4)
def _can_link_static(cxx: str) -> bool:
    try:
        out = subprocess.run([cxx, '-print-file-name=libc.a'], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return os.path.isabs(out.stdout.decode().strip())


class CppExecutor(Executor):
    """g++ -O2 with C++17 (GNU dialect), statically linked where the toolchain allows."""

    language = 'cpp'
    source_name = 'source.cpp'
    compiled = True

    def version(self) -> str:
        return tool_version((self.toolchain.cxx, '--version'))

    def flags(self) -> list[str]:
        """Compiler flags; part of the cache key."""
        flags = ['-std=gnu++17', '-O2', '-pipe']
        if _can_link_static(self.toolchain.cxx):
            flags.append('-static')
        return flags

    def compile(self, source: str) -> Compiled:
        flags = self.flags()
        artifact = self.cache_path('cpp', self.version(), ' '.join(flags), source)
        if os.path.isfile(artifact):
            return Compiled(ok=True, cached=True, artifact=artifact)
        limits = Limits(
            time_s=self.toolchain.compile_time_s,
            memory_mb=self.toolchain.compile_memory_mb,
            as_extra_mb=1024,
            capture_bytes=64 * 1024,
        )
        result = self.execute(
            ExecRequest(
                limits=limits,
                argv=[self.toolchain.cxx, *flags, self.source_name, '-o', BINARY],
                files={self.source_name: source},
                exports={BINARY: artifact},
            )
        )
        ok = result.exit_code == 0 and not result.timed_out and os.path.isfile(artifact)
        stderr = result.stderr
        if result.timed_out:
            stderr += f'\ncompilation exceeded {limits.time_s:g}s'.encode()
        return Compiled(
            ok=ok,
            cached=False,
            stderr=stderr,
            wall_s=result.wall_s,
            artifact=artifact if ok else None,
            timed_out=result.timed_out,
        )

    def run(self, source: str, compiled: Compiled | None, stdin: bytes, limits: Limits) -> ExecResult:
        assert compiled is not None and compiled.artifact is not None
        return self.execute(
            ExecRequest(
                limits=limits,
                argv=[f'./{BINARY}'],
                imports={BINARY: compiled.artifact},
                stdin=stdin,
            )
        )
