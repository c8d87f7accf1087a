"""C++: g++ in the sandbox into the node's compile cache, with a precompiled <bits/stdc++.h>, then run."""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import re
import subprocess
import time

from judge.executors.compiled import CompiledExecutor
from judge.executors.toolchain import can_link_static
from judge.sandbox.client import ExecRequest
from judge.sandbox.limits import Limits

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


class CppExecutor(CompiledExecutor):
    """g++ -O2 with C++17 (GNU dialect), statically linked where the toolchain allows."""

    language = 'cpp'
    control_source = 'int main() { return 0; }\n'
    source_name = 'source.cpp'
    version_argv = ('g++', '--version')
    compile_argv = ('g++', '-std=gnu++17', '-O2', '-pipe', '{src}', '-o', '{out}')
    run_argv = ('./{out}',)
    source_suffixes = ('.cpp', '.cc', '.cxx')
    oom_markers = ('std::bad_alloc',)

    def tool(self, name: str) -> str:
        if name == 'g++':
            return self.toolchain.cxx
        return super().tool(name)

    def flags(self) -> list[str]:
        """Compiler flags; part of the cache key."""
        flags = [a for a in self.compile_argv[1:] if not a.startswith('{') and a != '-o']
        if can_link_static(self.toolchain.cxx):
            flags.append('-static')
        return flags

    def compile_key(self, source: str) -> tuple[str, ...]:
        return (self.version(), ' '.join(self.flags()), source)

    def extra_compile_args(self, source: str) -> list[str]:
        extra = ['-static'] if can_link_static(self.toolchain.cxx) else []
        pch = self.pch_dir(build=bool(_USES_BITS.search(source)))
        if pch is not None:
            extra += ['-I', pch]
        return extra

    @functools.cached_property
    def pch_limits(self) -> Limits:
        """The compile limits with room to precompile <bits/stdc++.h>: at least 120 s, 2 GiB, 512 MiB files."""
        limits = self.compile_limits
        return limits._replace(time_s=max(120.0, limits.time_s), memory_mb=2048, file_bytes=512 * 1024 * 1024)

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
            result = self.execute(
                ExecRequest(
                    limits=self.pch_limits,
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
