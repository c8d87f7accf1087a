"""A program whose first statements come compiled: the child's side of `judge.sandbox.server.warm.prefixes`.

The slot server compiles the statements that consecutive programs start with (a client's template)
once, and sends each program that starts with them the compiled code (marshal data it made itself).
The child then compiles only the rest of its source.  Import-light (a warm parent imports it).
"""

from __future__ import annotations

import marshal
import types

_FUTURE_FLAGS = 0x1FE0000
"""The compiler flags of every ``from __future__`` feature (``CO_FUTURE_*``), without importing `__future__`."""


def _renamed(code: types.CodeType, path: str) -> types.CodeType:
    consts = tuple(_renamed(c, path) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=path, co_consts=consts)


def split_program(source: str, path: str, prefix: tuple[int, bytes] | None) -> tuple[types.CodeType, ...] | None:
    """With ``prefix`` (the length and compiled code of the statements the source starts with,
    `judge.sandbox.server.warm.prefixes`): that code and the rest's, compiled here with the prefix's line
    count and ``__future__`` features.  None when there is no prefix or the rest does not compile alone:
    the caller then compiles the whole source, as a fresh interpreter would (and reports its errors)."""
    if prefix is None:
        return None
    length, data = prefix
    head, rest = source[:length], source[length:]
    if '__future__' in rest:
        return None
    head_code = _renamed(marshal.loads(data), path)
    try:
        padded = '\n' * head.count('\n') + rest
        return head_code, compile(padded, path, 'exec', head_code.co_flags & _FUTURE_FLAGS, dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
