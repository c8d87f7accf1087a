"""C++: compiled once per node inside the sandbox (content-addressed cache), then run."""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import re
import subprocess
import time

from judge.executors.base import Compiled, Executor, tool_version
from judge.sandbox.client import ExecRequest, ExecResult
from judge.sandbox.limits import Limits

BINARY = 'run'
PCH_NAME = 'stdc++.h.gch'
logger = logging.getLogger('judge.executors.cpp')
_PCH_RETRY_S = 600.0
_PCH_FAILED_AT: dict[str, float] = {}
_USES_BITS = re.compile(r'#\s*include\s*<bits/stdc\+\+\.h>')


@functools.lru_cache(maxsize=4)
def _bits_header(cxx: str) -> str | None:
    """Where the compiler's <bits/stdc++.h> lives (None if it has none)."""
    try:
        out = subprocess.run(
            [cxx, '-x', 'c++', '-E', '-H', '-'],
            input=b'#include <bits/stdc++.h>\n',
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.stderr.decode(errors='replace').splitlines():
        path = line.lstrip('. ').strip()
        if path.endswith('/bits/stdc++.h') and os.path.isfile(path):
            return path
    return None


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

    def _pch_flags(self) -> list[str]:
        return [f for f in self.flags() if f not in ('-static', '-pipe')]

    def pch_dir(self, build: bool) -> str | None:
        """The node's precompiled <bits/stdc++.h> directory; built once (under a lock) when ``build``."""
        pch_dir = self.cache_path('pch', self.version(), ' '.join(self._pch_flags()))
        gch = os.path.join(pch_dir, 'bits', PCH_NAME)
        if os.path.isfile(gch):
            return pch_dir
        header = _bits_header(self.toolchain.cxx) if build else None
        if header is None or time.monotonic() - _PCH_FAILED_AT.get(pch_dir, -1e9) < _PCH_RETRY_S:
            return None
        os.makedirs(os.path.dirname(pch_dir), exist_ok=True)
        with open(f'{pch_dir}.lock', 'w') as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None  # another slot is building it: compile without it this time
            if os.path.isfile(gch):
                return pch_dir
            limits = Limits(
                time_s=max(120.0, self.toolchain.compile_time_s),
                memory_mb=2048,
                as_extra_mb=1024,
                file_bytes=512 * 1024 * 1024,
            )
            result = self.execute(
                ExecRequest(
                    limits=limits,
                    argv=[self.toolchain.cxx, *self._pch_flags(), '-x', 'c++-header', header, '-o', PCH_NAME],
                    exports={PCH_NAME: gch},
                )
            )
            if result.exit_code != 0 or not os.path.isfile(gch):
                _PCH_FAILED_AT[pch_dir] = time.monotonic()
                logger.warning(
                    'could not build the <bits/stdc++.h> PCH: %s', result.stderr[-500:].decode(errors='replace')
                )
                return None
            logger.info('built the <bits/stdc++.h> PCH in %.1fs', result.wall_s)
        return pch_dir

    def compile(self, source: str) -> Compiled:
        flags = self.flags()
        artifact = self.cache_path('cpp', self.version(), ' '.join(flags), source)
        if os.path.isfile(artifact):
            return Compiled(ok=True, cached=True, artifact=artifact)
        pch = self.pch_dir(build=bool(_USES_BITS.search(source)))
        if pch is not None:
            flags = [*flags, '-I', pch]
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
