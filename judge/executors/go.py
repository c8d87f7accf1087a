"""Go: ``go build`` in the sandbox (cgo off, a static binary) into the node's compile cache, then run.

The go command needs a writable ``GOCACHE``: ``$HOME`` is the work dir, so its default
``$HOME/.cache/go-build`` is; the standard library comes precompiled with Debian's Go 1.19.
``GOMAXPROCS`` bounds the runtime's threads (the pids limit counts them) and ``GOMEMLIMIT`` makes
the collector work to stay under the memory limit.
"""

from __future__ import annotations

from judge.executors.compiled import CompiledExecutor


class GoExecutor(CompiledExecutor):
    """go build -trimpath of a single ``package main`` file."""

    language = 'go'
    control_source = 'package main\n\nfunc main() {}\n'
    source_name = 'main.go'
    version_argv = ('go', 'version')
    compile_argv = ('go', 'build', '-o', '{out}', '{src}')
    compile_env = {'CGO_ENABLED': '0', 'GOMAXPROCS': '2', 'GO111MODULE': 'off', 'GOPROXY': 'off'}
    diagnostic_exit_codes = (1, 2)  # the compiler's errors come back from `go build` as status 2
    run_argv = ('./{out}',)
    run_env = {'GOMAXPROCS': '2', 'GOMEMLIMIT': '{heap_mb}MiB'}
    as_extra_mb = 1024  # the runtime reserves ~700 MiB of address space at start (page summaries)
    oom_markers = ('runtime: out of memory', 'fatal error: out of memory')
