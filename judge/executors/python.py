"""Python: a warm interpreter forked per submission, or a fresh `python3 -I file.py`."""

from __future__ import annotations

from judge.executors.base import Compiled, Executor
from judge.sandbox.client import ExecRequest, ExecResult
from judge.sandbox.limits import Limits


class PythonExecutor(Executor):
    """CPython 3, run like ``python3 source.py``."""

    language = 'python'
    source_name = 'source.py'
    version_argv = ('python3', '--version')
    run_argv = ('python3', '-I', '{src}')
    as_extra_mb = 128
    oom_markers = ('MemoryError',)

    def tool(self, name: str) -> str:
        if name == 'python3':
            return self.toolchain.python
        return super().tool(name)

    def run(self, source: str, compiled: Compiled | None, stdin: bytes, limits: Limits) -> ExecResult:
        if self.toolchain.python_mode != 'warm':
            return super().run(source, compiled, stdin, limits)
        request = ExecRequest(
            limits=self.run_limits(limits), python_source=source, python_filename=self.source_name, stdin=stdin
        )
        return self.execute(request)
