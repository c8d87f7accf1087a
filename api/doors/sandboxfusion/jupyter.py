"""``/run_jupyter`` as one Python program: a driver of our own that runs the cells in order in one
namespace, the way a notebook kernel does, and reports each cell's output.

Per cell: what it wrote to ``sys.stdout`` and ``sys.stderr``; ``display``, the plain-text
representation of the value of a last bare expression (``{"text/plain": repr}``, as a kernel's
``execute_result`` has it); ``error``, an uncaught exception as ``{ename, evalue, traceback}``.  A
cell that raises does not stop the next ones.  ``cell_timeout`` interrupts a cell with
``TimeoutError`` (an error of that cell).  The report is one line on the real standard output,
after a per-request marker, read back by `parse_report`.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

_DRIVER = r"""
import ast as _ast, contextlib as _contextlib, io as _io, json as _json, signal as _signal, sys as _sys
import traceback as _traceback

_CELLS = {cells!r}
_CELL_TIMEOUT = {cell_timeout!r}
_MARKER = {marker!r}
_REAL_OUT = _sys.stdout
_namespace = {{'__name__': '__main__', '__builtins__': __builtins__}}


def _alarm(signum, frame):
    raise TimeoutError('cell timed out after %gs' % _CELL_TIMEOUT)


def _run_cell(index, text):
    out, err = _io.StringIO(), _io.StringIO()
    report = {{'stdout': '', 'stderr': '', 'display': [], 'error': []}}
    if _CELL_TIMEOUT > 0:
        _signal.signal(_signal.SIGALRM, _alarm)
        _signal.setitimer(_signal.ITIMER_REAL, _CELL_TIMEOUT)
    try:
        with _contextlib.redirect_stdout(out), _contextlib.redirect_stderr(err):
            tree = _ast.parse(text, '<cell %d>' % index)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], _ast.Expr) else None
            exec(compile(tree, '<cell %d>' % index, 'exec'), _namespace)
            if last is not None:
                value = eval(compile(_ast.Expression(last.value), '<cell %d>' % index, 'eval'), _namespace)
                if value is not None:
                    _namespace['_'] = value
                    report['display'].append({{'text/plain': repr(value)}})
    except BaseException as exc:
        if isinstance(exc, SystemExit) and exc.code in (None, 0):
            pass
        else:
            tb = exc.__traceback__.tb_next if exc.__traceback__ else None
            lines = _traceback.format_exception(type(exc), exc, tb)
            report['error'].append({{'ename': type(exc).__name__, 'evalue': str(exc), 'traceback': lines}})
    finally:
        if _CELL_TIMEOUT > 0:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
    report['stdout'], report['stderr'] = out.getvalue(), err.getvalue()
    return report


_cells = [_run_cell(i, c) for i, c in enumerate(_CELLS)]
_REAL_OUT.write('\n' + _MARKER + _json.dumps(_cells) + '\n')
_REAL_OUT.flush()
"""


def driver(cells: list[str], cell_timeout_s: float) -> tuple[str, str]:
    """The driver program for ``cells`` and the marker its report line starts with."""
    marker = f'@@judge-cells-{secrets.token_hex(8)}@@'
    timeout = float(cell_timeout_s) if cell_timeout_s > 0 else 0.0
    return _DRIVER.format(cells=list(cells), cell_timeout=timeout, marker=marker), marker


def parse_report(stdout: str, marker: str, n: int) -> list[dict[str, Any]] | None:
    """The cells' reports from the driver's output; None when it has none (it did not finish)."""
    at = stdout.rfind(marker)
    if at < 0:
        return None
    try:
        cells = json.loads(stdout[at + len(marker) :].split('\n', 1)[0])
    except ValueError:
        return None
    if not isinstance(cells, list) or len(cells) != n:
        return None
    return cells
