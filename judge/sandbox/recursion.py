"""A fresh interpreter's recursion budget for programs that run above the warm parent's frames.

A warm child runs the program several frames deep (the zygote's bootstrap, `serve`, `run_spare`,
`run_python`).  `hide_frames` raises the real limit by that many and puts in ``sys`` a
``getrecursionlimit``/``setrecursionlimit`` pair that shows and takes the limit a fresh interpreter
would have.  Imported by the warm parents (see `judge.sandbox.lowlevel`): `sys` only.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def stack_depth() -> int:
    """How many frames the caller's stack holds, the caller's own included."""
    depth, frame = 0, sys._getframe(1)
    while frame is not None:
        depth += 1
        frame = frame.f_back  # type: ignore[assignment]
    return depth


_RECURSION_SHIMS = """\
def getrecursionlimit():
    return _get() - _extra
def setrecursionlimit(limit, /):
    _set(limit + _extra)
"""


def hide_frames(extra: int) -> None:
    """Give user code the recursion budget of a fresh interpreter despite our frames below it.

    The replacements are built in a namespace of their own: their globals hold the two originals
    and the frame count, nothing of this module's.
    """
    namespace: dict[str, object] = {
        '__builtins__': {},
        '_get': sys.getrecursionlimit,
        '_set': sys.setrecursionlimit,
        '_extra': extra,
    }
    exec(compile(_RECURSION_SHIMS, '<sys>', 'exec'), namespace)
    shims: dict[str, Any] = {name: namespace[name] for name in ('getrecursionlimit', 'setrecursionlimit')}
    for name, shim in shims.items():
        shim.__doc__ = getattr(sys, name).__doc__
        shim.__module__ = 'sys'
    sys.setrecursionlimit(1000 + extra)
    sys.getrecursionlimit, sys.setrecursionlimit = shims['getrecursionlimit'], shims['setrecursionlimit']
