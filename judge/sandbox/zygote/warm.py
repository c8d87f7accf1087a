"""Run Python source inside a forked, warm interpreter the way ``python3 file.py`` would.

What programs can observe is emulated: ``__name__ == '__main__'``, ``__file__``, ``sys.argv``,
fresh standard streams on fds 0-2, ``sys.exit`` codes, uncaught exceptions printed by
``sys.excepthook`` with the user's own line numbers, atexit handlers, non-daemon threads joined at
exit, and the default recursion limit.  Always ends the process with ``os._exit``.

Just before that, the child reports its end (`DONE_RECORD`) into a FIFO the slot server made for
this execution (``done_path``, outside the work dir, writable by the slot's uid only), after closing
its standard streams.  It opens the FIFO only then, so the program runs with no descriptor beyond
0-2, as under ``python3 file.py``.  Tearing down a forked interpreter's memory is a large share of
a short execution's cost, so the server answers as soon as the record arrives and kills and reaps
the child afterwards.  The record comes from a process that ran untrusted code, so it is only believed for
what the program decides anyway: its exit status (CPU time and peak memory are informational, and
limits are enforced from outside).  A program that ends any other way (``os._exit``, a signal,
``exec``) sends no record, and the server waits for the process to end, as for other languages.
"""

from __future__ import annotations

# Imported here, once, in the zygote: `atexit` is not loaded at start-up, and importing it in each
# child would run the import machinery there, writing to pages shared with the zygote every time.
import _signal
import atexit
import builtins
import io
import os
import resource
import struct
import sys
import types

# `importlib.machinery.SourceFileLoader` itself, without importing `importlib` (see `judge.sandbox.fdio`)
from _frozen_importlib_external import SourceFileLoader

from judge.sandbox.zygote import upgrade as _upgrade
from judge.sandbox.zygote.recursion import hide_frames
from judge.sandbox.zygote.split import split_program

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

DONE_RECORD = struct.Struct('>idq')
"""Exit status, CPU seconds (the process and its waited-for children) and peak RSS in KB; the status
`judge.sandbox.zygote.upgrade.UPGRADE_STATUS` asks for the scientific parent instead."""


def watch_scientific(names: list[str]) -> None:
    """In a lean or bare warm parent: let its children ask for the scientific one (`judge.sandbox.zygote.upgrade`)."""
    if names:
        _upgrade.install(frozenset(names), DONE_RECORD.pack(_upgrade.UPGRADE_STATUS, 0.0, 0))


def _stream(fd: int, name: str, errors: str, line_buffering: bool = False) -> io.TextIOWrapper:
    raw = io.FileIO(fd, 'rb' if fd == 0 else 'wb', closefd=False)
    raw.name = name  # as the interpreter names its own: '<stdin>'...
    buffer = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffer, encoding='utf-8', errors=errors, line_buffering=line_buffering)


def _fresh_streams() -> None:
    # As python3 under the C.UTF-8 locale: undecodable bytes in and out are surrogate-escaped.
    sys.stdin = _stream(0, '<stdin>', 'surrogateescape')
    sys.stdout = _stream(1, '<stdout>', 'surrogateescape')
    sys.stderr = _stream(2, '<stderr>', 'backslashreplace', line_buffering=True)
    for name in ('stdin', 'stdout', 'stderr'):
        setattr(sys, f'__{name}__', getattr(sys, name))


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f'{code}\n')
    except Exception:
        pass
    return 1


def _shutdown() -> None:
    threading = sys.modules.get('threading')
    if threading is not None:
        try:
            threading._shutdown()
        except Exception:
            pass
    atexit._run_exitfuncs()


def _flush() -> int:
    status = 0
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            status = 120
    return status


def _preload(modules: list[str]) -> None:
    """Import ``modules`` (with the project's directory already off ``sys.path``); report failures
    on stderr, which is still the slot server's (the worker's log)."""
    for name in modules:
        try:
            __import__(name)
        except Exception as exc:  # a module this interpreter lacks: programs importing it fail as usual
            _say(f'could not preload {name!r}: {type(exc).__name__}: {exc}')


def _say(text: str) -> None:
    try:
        os.write(2, f'judge.sandbox.zygote.warm: {text}\n'.encode())
    except OSError:
        pass


_main: types.ModuleType | None = None
"""The children's ``__main__`` module, made once by `prepare_interpreter` (each child gets its own copy)."""
_random_states: list[Any] = []
"""Generators seeded when their module was imported in the parent, which each child reseeds."""


def prepare_interpreter(
    env: dict[str, str], preload: list[str] | None = None, frames_below: int = 0, warm_up: bool = False
) -> None:
    """Once, in the process the children are forked from: their environment, module path,
    preloaded modules (with a preload, the driver warm-up, then with ``warm_up`` the scientific one, so
    that sympy's state is the last the parent builds: `judge.sandbox.zygote.prepare`),
    standard streams, recursion budget and ``__main__`` module.

    ``frames_below`` is the depth of the children's stacks where `run_python` runs, its own frame
    included: user code gets the recursion budget of a fresh interpreter on top of it.

    Done once so that each child only adds what is its own (its work dir), instead of paying for
    rebuilding ``os.environ`` and ``sys.path`` and for three new text streams (mostly copy-on-write
    page faults, in every child).  The streams are built over descriptors of the
    same kinds a child gets (an empty memfd on 0, pipes on 1 and 2), so what they learn when built
    (seekable or not, block size, position) holds in every child, which only puts its own
    descriptors on 0-2.  This process must not use its standard streams afterwards: nothing reads
    those pipes.
    """
    os.environ.clear()
    os.environ.update(env)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    sys.path[:] = [p for p in sys.path if p and p != here]
    _preload(preload or [])
    # The compiler's first use in a process builds state of its own: done here once, not in every child
    exec(compile('_ = 0', '<warm-up>', 'exec', dont_inherit=True), {})
    from judge.sandbox.zygote import prepare  # used here only: no child can reach it

    if preload:
        prepare.driver_warm_up()
    if warm_up:
        for statement in prepare.warm_up():
            _say(f'warm-up statement failed: {statement!r}')
    _random_states[:] = prepare.find_random_states()
    if warm_up:
        prepare.collapse_huge_pages()
    vars(sys.modules['judge.sandbox.zygote']).pop('prepare', None)
    del prepare
    stdin = os.memfd_create('stdin', 0)
    os.dup2(stdin, 0)
    os.close(stdin)
    for fd in (1, 2):
        read_end, write_end = os.pipe()
        os.dup2(write_end, fd)
        os.close(write_end)
        os.close(read_end)
    _fresh_streams()
    hide_frames(frames_below + 1)
    global _main
    _main = types.ModuleType('__main__')
    # What a fresh interpreter's __main__ holds besides __name__, __doc__, __package__, __spec__.
    _main.__builtins__ = builtins  # type: ignore[attr-defined]
    _main.__annotations__ = {}
    _main.__cached__ = None  # type: ignore[attr-defined]


def _clear_main(main: types.ModuleType) -> None:
    """Clear ``__main__``'s globals as interpreter finalisation does (names starting with one
    underscore first, then the rest, ``__builtins__`` kept), so that ``__del__`` of objects only
    the program's globals hold runs before the end, as under ``python3 file.py``."""
    names = [n for n in list(main.__dict__) if n != '__builtins__']
    for name in sorted(names, key=lambda n: not (n.startswith('_') and not n.startswith('__'))):
        main.__dict__[name] = None


def _report_done(done_path: str, status: int) -> None:
    """Close the output pipes, then tell the server how the program ended (see the module's doc)."""
    for fd in (1, 2):
        try:
            os.close(fd)
        except OSError:
            pass
    own = resource.getrusage(resource.RUSAGE_SELF)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime
    record = DONE_RECORD.pack(status, cpu_s, max(own.ru_maxrss, waited.ru_maxrss))
    try:
        fd = os.open(done_path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return  # no reader: the server then learns the end from the exit
    try:
        os.write(fd, record)
    except OSError:
        pass
    os.close(fd)


def _reseed() -> None:
    """Random states a fork would otherwise share with every sibling: `random` reseeds itself after
    ``fork``; the generators the parent found (`_random_states`: sympy's, numpy's global one...) are
    reseeded here from fresh entropy, as their modules' import would have in a fresh interpreter."""
    for state in _random_states:
        try:
            state.seed()
        except Exception:
            pass
    symbol = sys.modules.get('sympy.core.symbol')
    if symbol is not None:  # the parent imported sympy: redraw what it drew from `Dummy._prng` then
        try:
            symbol.Dummy._base_dummy_index = symbol.Dummy._prng.randint(10**6, 9 * 10**6)
        except Exception:
            pass


def run_python(
    source: str | None,
    filename: str,
    workdir: str,
    done_path: str | None = None,
    upgrade: int = 0,
    prefix: tuple[int, bytes] | None = None,
) -> NoReturn:
    """Execute ``source`` as the ``__main__`` module and exit with Python's exit status.

    Expects `prepare_interpreter` to have run in an ancestor (the streams are its) and the
    current directory to be ``workdir``.  With ``done_path``, the end is reported there first, by
    this process only: a child the program forks that ends the same way (``sys.exit``, falling off
    the end of the script) only ends itself, as under ``python3 file.py``.  ``upgrade`` is the
    server's plan for a program's first lookup of a scientific package (`judge.sandbox.zygote.upgrade`):
    0 nothing, ``OBSERVE`` note it in the done record, ``OFFER`` end this attempt with a request to
    run the program in the scientific parent.  ``prefix``: the compiled statements the source starts
    with (`judge.sandbox.zygote.split`).
    """
    main_pid = os.getpid()
    if upgrade:
        _upgrade.arm(done_path, upgrade)
    os.environ['HOME'] = os.environ['TMPDIR'] = workdir
    sys.argv = [filename]
    sys.orig_argv = [sys.executable, '-I', filename]  # the fresh mode's command line
    _reseed()
    cwd = os.getcwd()  # ``workdir`` with any symlink resolved, as a fresh interpreter sees it
    # Nothing is put before sys.path: under ``python3 -I`` the script's directory is not on it.
    assert _main is not None, 'prepare_interpreter() must run first'
    main = _main
    main.__file__ = os.path.join(cwd, filename)
    main.__loader__ = SourceFileLoader('__main__', main.__file__)
    sys.modules['__main__'] = main
    status = 0
    interrupted = False
    try:
        # dont_inherit: this module's `from __future__` imports must not reach the program's code.
        codes = split_program(source or '', main.__file__, prefix)
        if codes is None:
            codes = (compile(source or '', main.__file__, 'exec', dont_inherit=True),)
        for code in codes:
            exec(code, main.__dict__)
    except SystemExit as exc:
        status = _exit_code(exc)
    except BaseException:
        etype, value, tb = sys.exc_info()
        if value is not None and tb is not None:
            value.__traceback__ = tb.tb_next  # hide this module's frame, as `python file.py` would
        sys.excepthook(etype, value, value.__traceback__ if value is not None else None)  # type: ignore[arg-type]
        status = 1
        interrupted = isinstance(value, KeyboardInterrupt)
    try:
        _shutdown()
        _clear_main(main)
    except SystemExit as exc:
        status = _exit_code(exc)
    except BaseException:
        sys.excepthook(*sys.exc_info())
    flush_status = _flush()  # always: output must go out whatever the status
    status = status or flush_status
    if interrupted:  # python3 then ends itself with the signal: no record, the server sees it
        _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
        os.kill(os.getpid(), _signal.SIGINT)
    if done_path is not None and os.getpid() == main_pid:
        _report_done(done_path, status | _upgrade.flags())
    os._exit(status)
