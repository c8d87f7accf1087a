"""Byte I/O on descriptors and rlimits: what the warm parents and their children need, and no more.

A warm parent (`judge.sandbox.zygote.main`) imports this and the modules it forks its children
from; everything they import stays in its memory, which every ``fork`` copies the page tables of
and every exiting child tears down.  So these modules import only the standard library's small
C-backed modules (`os`, `resource`, ``_socket``, ``_signal``, `select`, `struct`, `marshal`,
`ctypes`), never `typing`, `re`, `json`, `enum`, `collections` or `socket`/`signal` (which pull in
`enum` and `selectors`); ``tests/unit/test_layering.py`` and ``tests/sandbox/test_parents.py``
check it.  Type names come from ``if TYPE_CHECKING:`` blocks.
"""

from __future__ import annotations

import os
import resource

from judge.sandbox.errors import ProtocolError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence


def read_exact(fd: int, n: int) -> bytes:
    """Read exactly ``n`` bytes; `ProtocolError` if the channel closes first."""
    chunks: list[bytes] = []
    while n > 0:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise ProtocolError('channel closed')
        chunks.append(chunk)
        n -= len(chunk)
    return b''.join(chunks)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (a pipe may take it in several writes)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def apply_rlimits(triples: Iterable[Sequence[int]]) -> None:
    """Set the calling (child) process's rlimits, soft and hard: user code cannot raise them.

    The slot server computes the triples (`judge.sandbox.limits.rlimits`) and sends them in the
    plan, so the child does no more than the system calls.
    """
    for which, soft, hard in triples:
        resource.setrlimit(which, (soft, hard))
