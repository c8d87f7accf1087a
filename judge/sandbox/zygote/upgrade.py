"""Moving a program to the scientific parent when it turns out to need it: the child's side.

The slot server chooses a warm parent from what a program's source shows (`judge.sandbox.server.warm.parents`).
A program can hide its imports: a client's template that runs the model's code from base64 text
through ``exec``, an ``importlib.import_module`` of a computed name, an import inside a function.
Such a program, sent to the lean or bare parent, would import sympy or numpy itself, cold, at a
hundred times the cost of a warm one.

So the lean and bare parents watch the directory that holds the scientific packages: `install`
turns its import finder (the ``FileFinder`` in ``sys.path_importer_cache``, which every top-level
import that reaches that directory asks) into one that, when a program looks up one of those
packages for the first time, may instead end the execution with a request to run it again in the
scientific parent (`UPGRADE_STATUS` in the done record, `judge.sandbox.zygote.warm`).  The server
then discards everything the first attempt did (its output, its work dir, its processes) and runs
the same program, with the same stdin, from the start in a scientific child, within what remains of
the time limit.  Nothing of the first attempt can reach the second: only the time it took.

The request is made only when the server offered it for this execution (`arm`), from the
program's main process, and while the program has used less than `CPU_BUDGET_S` of CPU, so that a
program never loses more by starting again than a cold import would have cost it.  Otherwise the
lookup goes on as usual.  What a program could notice: ``type()`` of that one entry of
``sys.path_importer_cache`` is a subclass of ``FileFinder`` (its ``repr`` is the same), and the
entry exists before the program's first import from that directory.

Import-light (a warm parent imports it): see `judge.sandbox.fdio`.
"""

from __future__ import annotations

import os
import resource
import sys

# `importlib.machinery`'s classes themselves, without importing `importlib` (see `judge.sandbox.fdio`)
from _frozen_importlib_external import FileFinder, PathFinder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

UPGRADE_STATUS = 1 << 20
"""The status a done record carries to ask for the scientific parent (no exit status is this large)."""
SEEN_FLAG = 1 << 21
"""Added to a done record's exit status when the program looked a scientific package up without the
offer (the server then starts its scientific parent, for the next ones)."""
OBSERVE, OFFER = 1, 2
"""``plan['upgrade']``: watch only (`SEEN_FLAG`), or offer the scientific parent (`UPGRADE_STATUS`)."""
CPU_BUDGET_S = 0.2
"""A program that has used more CPU than this keeps running where it is (a cold import is cheaper)."""


class _Armed:
    """This execution's offer (set in the child by `arm`)."""

    pid = 0
    done_path: str | None = None
    offer = False
    seen = False


_armed = _Armed()


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _request(done_record: bytes) -> None:
    """Tell the server to run the program again in the scientific parent, then end this attempt."""
    path = _armed.done_path
    _armed.offer = False
    if path is None:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return  # no reader: carry on where we are
    try:
        os.write(fd, done_record)
    except OSError:
        os.close(fd)
        return
    os._exit(0)


def _make_finder_class(names: frozenset[str], done_record: bytes) -> type:
    class ScientificWatch(FileFinder):
        def find_spec(self, fullname: str, target: Any = None) -> Any:
            if fullname in names and _armed.pid == os.getpid():
                if _armed.offer and _cpu_s() < CPU_BUDGET_S:
                    _request(done_record)
                _armed.seen = True
            return FileFinder.find_spec(self, fullname, target)

    ScientificWatch.__name__ = ScientificWatch.__qualname__ = 'FileFinder'
    ScientificWatch.__module__ = FileFinder.__module__
    return ScientificWatch


def install(names: frozenset[str], done_record: bytes) -> list[str]:
    """In a lean or bare warm parent: watch the directories holding ``names`` (top-level packages);
    the directories watched (none when the packages are not installed)."""
    dirs: dict[str, set[str]] = {}
    for name in sorted(names):
        spec = PathFinder.find_spec(name)
        if spec is None:
            continue
        locations = spec.submodule_search_locations
        path = locations[0] if locations else spec.origin
        if path:
            dirs.setdefault(os.path.dirname(path), set()).add(name)
    for where, found in dirs.items():
        finder = sys.path_importer_cache.get(where)
        if finder is None:
            finder = PathFinder._path_importer_cache(where)  # type: ignore[attr-defined]  # as a first import would
        if type(finder) is FileFinder:
            finder.__class__ = _make_finder_class(frozenset(found), done_record)
    return sorted(dirs)


def arm(done_path: str | None, mode: int) -> None:
    """In the execution's child, before the program: ``mode`` is `OBSERVE` or `OFFER` (the server's plan)."""
    _armed.pid = os.getpid()
    _armed.done_path = done_path
    _armed.offer = mode == OFFER


def flags() -> int:
    """What to add to the done record's status: `SEEN_FLAG` when a scientific package was looked up."""
    return SEEN_FLAG if _armed.seen else 0
