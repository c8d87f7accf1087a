"""Tool-call programs in the shape RL clients really send: the model's code inside a wrapper template.

rStar2-Agent's client never sends a tool call's code as it is: it builds a program that imports a
handful of standard modules (``os``, ``base64``, ``sys``, ``ast``, ``traceback``, ``typing``,
``linecache``, ``types``, ``contextlib``, ``io``), defines an executor class, and runs the model's
code (and, for ``jupyter_code``, the earlier cells, silently) from base64 text through ``exec``.
`rstar_shape` writes programs of that shape, our own implementation of the same observable behaviour:

* the cell's last top-level expression is evaluated and its ``repr`` printed unless it is ``None``;
* an error prints ``<Type> at line <N>: <message>`` and the offending line (``N`` counted in the
  part that failed) to stderr, then ends the process with ``os._exit(1)``: unflushed stdout is lost;
* history cells run first with their output captured and their errors ignored.

The benchmark sends these beside the plain programs (`toolkit.bench.wrapped`), and the fidelity
corpus runs them fresh and warm.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

__all__ = ['rstar_shape']

_SETUP = '''
import os
import base64
import sys
import ast
import traceback
from typing import Optional, Any
import linecache
from types import CodeType
from contextlib import redirect_stdout, redirect_stderr
from io import StringIO


class CellError(Exception):
    """An error of a cell, told with the cell's own line number."""

    def __init__(self, error: BaseException, text: str, first_line: int = 0) -> None:
        self.error = error
        where = getattr(error, 'lineno', None)
        if where is None:
            tb = error.__traceback__
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            where = tb.tb_lineno if tb is not None else None
        kind = type(error).__name__
        if where is not None:
            where += first_line
            lines = text.splitlines()
            if 1 <= where <= len(lines):
                super().__init__(f"{kind} at line {where}: {error}\\n  {lines[where - 1]}")
                return
        super().__init__(f"{kind}: {error}")


class Notebook:
    """Runs cells in one namespace, like a notebook kernel."""

    def __init__(self) -> None:
        self.namespace = {'__name__': '__main__', '__file__': '<string>', '__builtins__': __builtins__}

    @staticmethod
    def split(text: str) -> 'tuple[str, Optional[str]]':
        try:
            tree = ast.parse(text)
        except SyntaxError as e:
            raise CellError(e, text)
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = tree.body[-1]
            lines = text.splitlines()
            end = getattr(last, 'end_lineno', None) or last.lineno
            return '\\n'.join(lines[: last.lineno - 1]), '\\n'.join(lines[last.lineno - 1 : end])
        return text, None

    def run(self, text: str, quiet: bool) -> None:
        try:
            body, tail = self.split(text)
            out = redirect_stdout(StringIO() if quiet else sys.stdout)
            err = redirect_stderr(StringIO() if quiet else sys.stderr)
            if body:
                try:
                    code = compile(body, '<string>', 'exec')
                    with out, err:
                        exec(code, self.namespace)
                except Exception as e:
                    raise CellError(e, body)
            if tail:
                try:
                    expr = compile(tail, '<string>', 'eval')
                    with out, err:
                        value = eval(expr, self.namespace)
                    if value is not None and not quiet:
                        print(repr(value), file=sys.stdout)
                except Exception:
                    try:
                        stmt = compile(tail, '<string>', 'exec')
                        with out, err:
                            exec(stmt, self.namespace)
                    except Exception as e:
                        raise CellError(e, tail, len(body.splitlines()) if body else 0)
        except Exception as e:
            if quiet:
                return
            if isinstance(e, CellError):
                print(str(e), file=sys.stderr)
            else:
                traceback.print_exc(file=sys.stderr)
            os._exit(1)


notebook = Notebook()
'''

_CELL = """
cell = base64.b64decode("{}".encode()).decode()
notebook.run(cell, quiet={})
"""


def rstar_shape(code: str, history: Sequence[str] = ()) -> str:
    """A program running ``code`` after ``history`` (silently), in the shape of rStar2-Agent's client."""

    def cell(text: str, quiet: bool) -> str:
        return _CELL.format(base64.b64encode(text.encode()).decode(), quiet)

    return _SETUP + ''.join(cell(text, True) for text in history) + cell(code, False)
