"""JavaScript: Node.js runs the source directly; V8's old space is half the memory limit.

V8 reserves far more address space than it uses, so ``RLIMIT_AS`` (the `uid` tier's memory
bound) would kill it at start: there ``--max-old-space-size`` alone bounds the heap.
"""

from __future__ import annotations

from judge.executors.base import Executor


class JavaScriptExecutor(Executor):
    """node source.js (CommonJS; read stdin with ``fs.readFileSync(0)``)."""

    language = 'javascript'
    source_name = 'source.js'
    version_argv = ('node', '--version')
    run_argv = ('node', '--max-old-space-size={heap_mb}', '{src}')
    run_env = {'OPENSSL_CONF': '/dev/null'}  # /etc/ssl is not readable in the sandbox
    rlimit_as = False
    heap_percent = 50  # the rest: node's own ~50 MiB, the young generation, buffers
    oom_markers = ('JavaScript heap out of memory', 'Reached heap limit')
