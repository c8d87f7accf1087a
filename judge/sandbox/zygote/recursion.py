"""A fresh interpreter's recursion budget for programs that run above the warm parent's frames.

A warm child runs the program several frames deep (the zygote's bootstrap, `serve`, `run_spare`,
`run_python`).  `hide_frames` raises the real limit by that many and puts in ``sys`` a
``getrecursionlimit``/``setrecursionlimit`` pair that shows and takes the limit a fresh interpreter
would have.  A new thread starts at the bottom of its own stack, so it would get those frames as
extra budget: ``_thread.start_new_thread`` (which `threading` calls) is replaced by one that runs the
thread's function the same number of frames deep, and reports its uncaught exception as the original
does.  Imported by the warm parents (see `judge.sandbox.fdio`): `sys` and `_thread` only.
"""

from __future__ import annotations

import _thread
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any


def stack_depth() -> int:
    """How many frames the caller's stack holds, the caller's own included."""
    depth, frame = 0, sys._getframe(1)
    while frame is not None:
        depth += 1
        frame = frame.f_back  # type: ignore[assignment]
    return depth


_SHIMS = """\
def getrecursionlimit():
    return _get() - _extra
def setrecursionlimit(limit, /):
    _set(limit + _extra)
def start_new_thread(*fargs, **kwargs):
    if kwargs:
        raise TypeError('start_new_thread() takes no keyword arguments')
    if not 2 <= len(fargs) <= 3:
        bound = 'least 2' if len(fargs) < 2 else 'most 3'
        raise TypeError(f'start_new_thread expected at {bound} arguments, got {len(fargs)}')
    function, args, *rest = fargs
    if not callable(function):
        raise TypeError('first arg must be callable')
    if not isinstance(args, tuple):
        raise TypeError('2nd arg must be a tuple')
    if rest and not isinstance(rest[0], dict):
        raise TypeError('optional 3rd arg must be a dictionary')
    return _start(_below, (_extra, function, args, rest[0] if rest else {}))
def start_new(*fargs, **kwargs):
    return start_new_thread(*fargs, **kwargs)
def _below(frames, function, args, kwargs):
    if frames > 1:
        return _below(frames - 1, function, args, kwargs)
    try:
        function(*args, **kwargs)
    except SystemExit:
        pass
    except BaseException as exc:
        tb = exc.__traceback__.tb_next
        report = _Args((type(exc), exc, tb, 'Exception ignored in thread started by', function))
        del exc, tb
        hook = getattr(_sys, 'unraisablehook', None)
        try:
            (hook or _sys.__unraisablehook__)(report)
        except BaseException:
            _sys.__unraisablehook__(report)
"""

# `__import__`: the default hook imports `io` through the calling frame's builtins to show source lines.
_SHIM_BUILTINS: tuple[Any, ...] = (BaseException, SystemExit, TypeError, __import__, callable, dict, getattr)
_SHIM_BUILTINS += (isinstance, len, tuple, type)


def _unraisable_args_type() -> type:
    """The type of `sys.unraisablehook`'s argument, which `sys` does not export: a generator whose
    clean-up fails at its deallocation reports through the hook."""
    caught: list[object] = []

    def failing() -> Iterator[None]:
        try:
            yield
        finally:
            raise RuntimeError  # reported through the hook: nobody can catch it

    hook, sys.unraisablehook = sys.unraisablehook, caught.append
    try:
        generator = failing()
        next(generator)
        del generator
    finally:
        sys.unraisablehook = hook
    return type(caught[0])


def hide_frames(extra: int) -> None:
    """Give user code, in every thread, the recursion budget of a fresh interpreter despite our
    frames below it.

    The replacements are built in a namespace of their own: their globals hold the originals, the
    frame count and `sys`, nothing of this module's.
    """
    namespace: dict[str, object] = {
        '__builtins__': {b.__name__: b for b in _SHIM_BUILTINS},
        '_get': sys.getrecursionlimit,
        '_set': sys.setrecursionlimit,
        '_start': _thread.start_new_thread,
        '_Args': _unraisable_args_type(),
        '_sys': sys,
        '_extra': extra,
    }
    exec(compile(_SHIMS, '<sys>', 'exec'), namespace)
    shims: dict[str, Any] = {name: namespace[name] for name in ('getrecursionlimit', 'setrecursionlimit')}
    threads: dict[str, Any] = {name: namespace[name] for name in ('start_new_thread', 'start_new')}
    sys.setrecursionlimit(1000 + extra)  # with the original, before the shims replace it
    for module, replacements in ((sys, shims), (_thread, threads)):
        for name, shim in replacements.items():
            shim.__doc__ = getattr(module, name).__doc__
            shim.__module__ = module.__name__
            setattr(module, name, shim)
    threading = sys.modules.get('threading')
    if threading is not None:  # already imported: it keeps its own reference to the original
        vars(threading)['_start_new_thread'] = threads['start_new_thread']
