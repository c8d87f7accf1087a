"""The program sent for a tool call, and the tool text the model reads back.

:func:`wrap_code` turns a code cell into a self-contained Python program that behaves like a
notebook cell (rStar2-Agent's observable behaviour, our own implementation):

* the value of a trailing top-level expression is printed with ``repr`` unless it is ``None``;
* an uncaught error prints ``<ErrType> at line <N>: <msg>`` and the offending source line to stderr,
  ``N`` counting lines of the user's cell (falls back to ``<ErrType>: <msg>``), then exits with 1;
* whatever the cell printed before the error is flushed and kept;
* earlier cells (``history``) run first, silently, errors ignored: a stateful notebook by replay;
* the cell runs in the real ``__main__`` namespace, so pickling functions it defines works.

:func:`format_tool_text` renders a result exactly as rStar2-Agent's client does
(``Tool call success|failure``, ``reason:``, ``stdout:``, ``stderr:``, ``execution time:``).
"""

from __future__ import annotations

from collections.abc import Sequence

from toolkit.errors import ToolkitError
from toolkit.models import Result

__all__ = ['CELL_FILENAME', 'format_error_text', 'format_tool_text', 'wrap_code']

CELL_FILENAME = '<cell>'
"""File name of the current cell in tracebacks; history cells are ``<cell-0>``, ``<cell-1>``, ..."""

_PROGRAM = r"""
def _toolkit_main(history, code):
    import ast, io, linecache, os, sys, contextlib
    ns = sys.modules['__main__'].__dict__
    ns.pop('_toolkit_main', None)

    def run(src, name, quiet):
        linecache.cache[name] = (len(src), None, src.splitlines(True), name)
        tree = ast.parse(src, name)
        tail = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            tail = ast.Expression(tree.body.pop().value)
        exec(compile(tree, name, 'exec'), ns)
        if tail is not None:
            value = eval(compile(tail, name, 'eval'), ns)
            if value is not None and not quiet:
                print(repr(value))

    def describe(err, src, name):
        line, msg = None, str(err)
        if isinstance(err, SyntaxError) and err.filename == name:
            line, msg = err.lineno, err.msg
        else:
            tb = err.__traceback__
            while tb is not None:
                if tb.tb_frame.f_code.co_filename == name:
                    line = tb.tb_lineno
                tb = tb.tb_next
        lines = src.splitlines()
        if line is not None and 1 <= line <= len(lines):
            return '%s at line %d: %s\n  %s' % (type(err).__name__, line, msg, lines[line - 1].strip())
        return '%s: %s' % (type(err).__name__, msg)

    for i, cell in enumerate(history):
        sink = io.StringIO()
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                run(cell, '<cell-%d>' % i, True)
        except (Exception, SystemExit):
            pass
    try:
        run(code, '<cell>', False)
    except SystemExit:
        sys.stdout.flush()
        raise
    except BaseException as err:
        try:
            sys.stdout.flush()
        finally:
            sys.stderr.write(describe(err, code, '<cell>') + '\n')
            sys.stderr.flush()
            os._exit(1)
"""


def wrap_code(code: str, history: Sequence[str] = ()) -> str:
    """A Python program running ``code`` as a notebook cell after replaying ``history`` (see module doc)."""
    return f'{_PROGRAM}\n_toolkit_main({list(history)!r}, {code!r})\n'


def format_tool_text(result: Result) -> str:
    """rStar2-Agent's tool text for one result (stdout/stderr inserted raw, cost with 2 decimals)."""
    ok = result.run_success and result.success
    lines = ['Tool call success'] if ok else ['Tool call failure', f'reason: {result.reason}']
    if result.stdout:
        lines.append(f'stdout: {result.stdout}')
    if result.stderr:
        lines.append(f'stderr: {result.stderr}')
    lines.append(f'execution time: {result.cost:.2f}s')
    return '\n'.join(lines)


def format_error_text(error: ToolkitError) -> str:
    """Tool text for a call that got no result (deadline, gateway down...), in the same format."""
    return f'Tool call failure\nreason: {error.reason}\nexecution time: 0.00s'
