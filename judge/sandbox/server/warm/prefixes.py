"""Programs that start with the same statements (a client's template): compiled once per slot.

RL clients wrap every tool call in a template of their own: rStar2-Agent's client sends some hundred
lines of imports and class definitions, then the model's code as base64 text.  Compiling those lines
costs a warm child more than running a small program.  The slot server notices when a program starts
with the same top-level statements as the previous one (`Prefixes.find`), compiles them once itself,
and hands each later program that starts with them the compiled code (marshal data, made here, so
trusted) beside its source (`judge.sandbox.zygote.warm` runs it, then compiles only the rest).

A child only ever receives code compiled from the start of its own source: what an earlier program
sent is never run, nor shown, in a later one.  The cache lives in the slot server (root, out of the
programs' reach), holds at most `MAX_PREFIXES` prefixes of at most `MAX_PREFIX_CHARS` characters, and
compiles a candidate at most once (a prefix that does not compile alone is remembered as such).
"""

from __future__ import annotations

import marshal

MIN_PREFIX_CHARS = 512
"""Shorter shared starts are not worth it (compiling them costs the child little)."""
MAX_PREFIX_CHARS = 65536
MAX_PREFIXES = 8
PROBE_CHARS = 64
"""A source whose first characters differ from the previous one's shares nothing worth caching."""
FILENAME = '<prefix>'
"""The compiled prefix's file name; the child puts its own in its place."""


def shared_length(a: str, b: str) -> int:
    """The length of the longest common start of ``a`` and ``b`` (string comparisons, no loop per character)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def statement_start(source: str, end: int) -> int:
    """The start of the last line at or before ``end`` that begins at column 0 with something other than a
    comment (where a top-level statement may start); 0 when there is none."""
    cut = source.rfind('\n', 0, end)
    while cut >= 0:
        after = source[cut + 1 : cut + 2]
        if after and after not in ' \t\r\n#':
            return cut + 1
        cut = source.rfind('\n', 0, cut)
    return 0


class Prefixes:
    """A slot's compiled template prefixes, learned from consecutive programs."""

    def __init__(self) -> None:
        self._compiled: dict[str, bytes] = {}
        self._rejected: set[str] = set()
        self._last: str | None = None

    def find(self, source: str) -> tuple[int, bytes] | None:
        """The length and compiled code (marshal) of a known prefix of ``source``; else, when ``source``
        starts with the same statements as the previous program, those, compiled now."""
        for prefix, code in self._compiled.items():
            if source.startswith(prefix):
                return len(prefix), code
        last, self._last = self._last, source
        if last is None or last[:PROBE_CHARS] != source[:PROBE_CHARS]:
            return None
        cut = statement_start(source, min(shared_length(last, source), MAX_PREFIX_CHARS))
        if cut < MIN_PREFIX_CHARS:
            return None
        prefix = source[:cut]
        if prefix in self._rejected:
            return None
        try:
            code = marshal.dumps(compile(prefix, FILENAME, 'exec', dont_inherit=True))
        except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError):
            if len(self._rejected) >= 4 * MAX_PREFIXES:
                self._rejected.clear()
            self._rejected.add(prefix)
            return None
        if len(self._compiled) >= MAX_PREFIXES:
            del self._compiled[next(iter(self._compiled))]
        self._compiled[prefix] = code
        return cut, code
