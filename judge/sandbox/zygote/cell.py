"""One notebook cell in a live session process: compile, seed, run, report (`judge.sandbox.zygote.session`).

A cell runs in the session's ``__main__`` namespace, like a Jupyter cell: a trailing top-level
expression is evaluated on its own and its ``repr`` reported as the cell's value (``_`` holds it
afterwards); an uncaught exception is printed on stderr (a traceback with the cell's own lines, or
rStar2-Agent's one-line ``<Error> at line <n>: <message>``) and the session lives on; ``SystemExit``
ends the cell with its code, not the session.

Replay (`judge.sandbox.server.sessions`) needs a cell to do the same thing again on another node, so
before each cell its recorded seed is put into `random`, numpy's global generator and entropy source,
and every generator the warm parent found at import (`judge.sandbox.zygote.warm`), and an audit hook
notes what replay cannot reproduce (`FLAG_*`).  Import-light: a warm parent imports it
(`judge.sandbox.fdio`); `traceback` is imported on a cell's first error only.
"""

from __future__ import annotations

import _ast
import os
import struct
import sys

from judge.sandbox import seedhook
from judge.sandbox.fdio import write_all
from judge.sandbox.zygote import warm

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DONE = struct.Struct('>iIdq')
"""A cell's end, after ``b'D'``: its status (0 fine, 1 an exception, or a ``SystemExit`` code), its
`FLAG_*` bits, CPU seconds of the session so far and its peak RSS in KiB; the value's repr follows."""
FLAG_INTERRUPTED = 1
"""The cell was stopped by the host's SIGINT (time or output limit)."""
FLAG_FILE = 2
"""It read a file an earlier cell wrote."""
FLAG_NETWORK = 4
FLAG_PROCESS = 8
FLAG_CLOCK = 16
FLAG_THREAD = 32
FLAG_RAISED = 64
"""An exception ended the cell (printed on stderr); the session lives on."""
FLAG_EXIT = 128
"""``SystemExit`` ended the cell; the status is its code."""
FLAG_NAMES = {
    FLAG_INTERRUPTED: 'interrupted',
    FLAG_FILE: 'file',
    FLAG_NETWORK: 'network',
    FLAG_PROCESS: 'process',
    FLAG_CLOCK: 'clock',
    FLAG_THREAD: 'thread',
}
VALUE_MAX_CHARS = 65536
_EVENTS = {
    'socket.connect': FLAG_NETWORK,
    'socket.bind': FLAG_NETWORK,
    'socket.getaddrinfo': FLAG_NETWORK,
    'socket.sendto': FLAG_NETWORK,
    'subprocess.Popen': FLAG_PROCESS,
    'os.system': FLAG_PROCESS,
    'os.posix_spawn': FLAG_PROCESS,
    'os.exec': FLAG_PROCESS,
    'os.fork': FLAG_PROCESS,
    'os.spawn': FLAG_PROCESS,
    'time.sleep': FLAG_CLOCK,
    '_thread.start_new_thread': FLAG_THREAD,
}
_WRITE_MODE = frozenset('wax+')
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


class Watch:
    """What the audit hook saw: files written by earlier cells, and this cell's flags."""

    def __init__(self) -> None:
        self.written: set[str] = set()
        self.now: set[str] = set()
        self.flags = 0

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        """`sys.addaudithook`'s callback: cheap for the events it ignores."""
        if event == 'open':
            self._open(args)
            return
        bit = _EVENTS.get(event)
        if bit is not None:
            self.flags |= bit

    def _open(self, args: tuple[Any, ...]) -> None:
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        if isinstance(path, int) or path is None:
            return
        try:
            name = os.path.abspath(os.fsdecode(path))
        except (TypeError, ValueError):
            return
        writes = bool(_WRITE_MODE & set(mode)) if isinstance(mode, str) else bool((flags or 0) & _WRITE_FLAGS)
        if writes:
            self.now.add(name)
        elif name in self.written:
            self.flags |= FLAG_FILE

    def start(self) -> None:
        """Before a cell: last cell's writes count as earlier ones."""
        self.written |= self.now
        self.now = set()
        self.flags = 0


WATCH = Watch()
_SEEDER = seedhook._Seeder(0)
"""Reseeds what a cell's imports create (`judge.sandbox.seedhook`), with the current cell's seed."""


def install() -> None:
    """Once per session, in its process: the audit hook and the import-time seeder."""
    import random  # seeded per cell from here on: its import-time entropy would not replay

    del random
    sys.addaudithook(WATCH.hook)
    sys.meta_path.insert(0, _SEEDER)


def seed_cell(seed: int) -> None:
    """Put ``seed`` into every generator a cell would draw from without asking for a seed."""
    _SEEDER.seed = seed
    rand = sys.modules.get('random')
    if rand is not None:
        rand.seed(f'{seed}:random')
    for i, state in enumerate(warm._random_states):
        try:
            state.seed(rand.Random(f'{seed}:state{i}').getrandbits(32) if rand is not None else seed)
        except Exception:
            pass
    for name in ('numpy.random.bit_generator', 'numpy.random.mtrand'):
        module = sys.modules.get(name)
        if module is not None:
            _SEEDER.reseed(module)


def fresh_stdin(data: bytes) -> None:
    """The cell's stdin: ``data`` in a memfd on fd 0 (empty: end of file at once), and a new `sys.stdin`."""
    import io

    fd = os.memfd_create('stdin', 0)
    write_all(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    os.dup2(fd, 0)
    os.close(fd)
    raw = io.FileIO(0, 'rb', closefd=False)
    raw.name = '<stdin>'
    sys.stdin = io.TextIOWrapper(io.BufferedReader(raw), encoding='utf-8', errors='surrogateescape')
    setattr(sys, '__stdin__', sys.stdin)  # noqa: B010  # a final name for the type checker


def split(code: str, name: str) -> tuple[Any, Any]:
    """The cell's statements and its trailing expression (None without one), compiled."""
    tree: Any = compile(code, name, 'exec', _ast.PyCF_ONLY_AST, dont_inherit=True)
    tail = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr):
        tail = compile(_ast.Expression(tree.body.pop().value), name, 'eval', dont_inherit=True)
    return compile(tree, name, 'exec', dont_inherit=True), tail


def remember_source(code: str, name: str) -> None:
    """Register the cell's lines for tracebacks (`linecache`, when loaded)."""
    cache = getattr(sys.modules.get('linecache'), 'cache', None)
    if isinstance(cache, dict):
        cache[name] = (len(code), None, code.splitlines(True), name)


def report_error(exc: BaseException, code: str, name: str, style: str) -> None:
    """Print ``exc`` on stderr: a traceback of the cell's frames, or the one-line ``style='line'`` form."""
    try:
        sys.stdout.flush()
    except Exception:
        pass
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != name:
        tb = tb.tb_next  # hide the session's own frames
    if style == 'line':
        line, msg = None, str(exc)
        if isinstance(exc, SyntaxError) and exc.filename == name:
            line, msg = exc.lineno, exc.msg
        walk = tb
        while walk is not None:
            if walk.tb_frame.f_code.co_filename == name:
                line = walk.tb_lineno
            walk = walk.tb_next
        lines = code.splitlines()
        text = f'{type(exc).__name__}: {msg}'
        if line is not None and 1 <= line <= len(lines):
            text = f'{type(exc).__name__} at line {line}: {msg}\n  {lines[line - 1].strip()}'
        sys.stderr.write(text + '\n')
    else:
        import linecache  # noqa: F401  # so that `remember_source` finds its cache next time
        import traceback

        remember_source(code, name)
        sys.stderr.write(''.join(traceback.format_exception(type(exc), exc, tb)))
    sys.stderr.flush()


def value_text(value: object) -> str | None:
    """The trailing expression's ``repr`` (None for None), bounded; never raises."""
    if value is None:
        return None
    try:
        text = repr(value)
    except BaseException as exc:
        text = f'<repr failed: {type(exc).__name__}>'
    return text[:VALUE_MAX_CHARS]


def done_message(status: int, value: str | None) -> bytes:
    """The ``D`` record the session sends when a cell ended (`DONE` plus the value's repr)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    flags = WATCH.flags
    head = DONE.pack(status, flags, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)
    return b'D' + head + (b'' if value is None else b'=' + value.encode('utf-8', 'surrogateescape'))
