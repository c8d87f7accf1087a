"""Python: a warm interpreter forked per submission, or a fresh `python3 -I file.py`."""

from __future__ import annotations

from judge.executors.base import Compiled, Executor, tool_version
from judge.sandbox.client import ExecRequest, ExecResult
from judge.sandbox.limits import Limits


class PythonExecutor(Executor):
    """CPython 3, run like ``python3 source.py``."""

    language = 'python'
    source_name = 'source.py'

    def version(self) -> str:
        return tool_version((self.toolchain.python, '--version'))

    def run(self, source: str, compiled: Compiled | None, stdin: bytes, limits: Limits) -> ExecResult:
        if self.toolchain.python_mode == 'warm':
            request = ExecRequest(limits=limits, python_source=source, python_filename=self.source_name, stdin=stdin)
        else:
            request = ExecRequest(
                limits=limits,
                argv=[self.toolchain.python, '-I', self.source_name],
                files={self.source_name: source},
                stdin=stdin,
            )
        return self.execute(request)
