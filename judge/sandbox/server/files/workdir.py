"""An execution's files: what the server writes into a work dir, what it exports or reads back from
it, and the done FIFO of warm Python (`judge.sandbox.zygote.warm`).  Runs inside the slot server."""

from __future__ import annotations

import os
import shutil
import stat
from typing import Any, Protocol

from judge.sandbox.fdio import write_all
from judge.sandbox.server.files.cleanup import remove_entry

_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class SlotIds(Protocol):
    """The slot's uid and gid (`judge.sandbox.server.jail.Jail`)."""

    uid: int | None
    gid: int | None


def give_to(ids: SlotIds, path: str | int) -> None:
    """Make ``path`` (or an open descriptor) the slot uid's (when there is one and we may)."""
    if ids.uid is not None and os.getuid() == 0:
        os.chown(path, ids.uid, ids.gid if ids.gid is not None else ids.uid)


def check_name(name: str) -> None:
    """A file name of the work dir: one component, never ``.`` or ``..``."""
    if not name or '/' in name or name in ('.', '..'):
        raise ValueError(f'bad file name {name!r}')


def check_path(path: str) -> list[str]:
    """A relative path inside the work dir, as its components: never absolute, never ``.``, ``..`` or empty."""
    parts = path.split('/')
    if not path or path.startswith('/') or '\0' in path or any(p in ('', '.', '..') for p in parts):
        raise ValueError(f'bad file name {path!r}')
    return parts


def _make_dirs(ids: SlotIds, workdir: str, parts: list[str]) -> None:
    """Create the directories leading to a file (before the program runs, so nothing in the way is a link)."""
    path = workdir
    for part in parts[:-1]:
        path = os.path.join(path, part)
        if not os.path.isdir(path) or os.path.islink(path):
            os.mkdir(path, 0o755)
            give_to(ids, path)


def write_files(ids: SlotIds, workdir: str, files: dict[str, str], imports: dict[str, str]) -> None:
    """Write the request's ``files`` (text; relative paths, directories made) and copy its ``imports``
    (host paths) into ``workdir``."""
    for name, text in files.items():
        parts = check_path(name)
        _make_dirs(ids, workdir, parts)
        fd = os.open(os.path.join(workdir, name), _NEW_FILE, 0o644)
        try:
            write_all(fd, text.encode('utf-8', 'surrogateescape'))
            give_to(ids, fd)
        finally:
            os.close(fd)
    for name, src in imports.items():
        check_name(name)
        dst = os.path.join(workdir, name)
        shutil.copyfile(src, dst)
        os.chmod(dst, 0o755)
        give_to(ids, dst)


def export_files(workdir: str, exports: dict[str, str]) -> None:
    """Copy produced files (e.g. a compiled binary) out of the work dir, atomically."""
    for name, dst in exports.items():
        check_name(name)
        src = os.path.join(workdir, name)
        if os.path.islink(src) or not os.path.isfile(src):
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        tmp = f'{dst}.tmp{os.getpid()}'
        shutil.copyfile(src, tmp)
        os.chmod(tmp, 0o755)
        os.replace(tmp, dst)


def fetch_files(workdir: str, paths: list[str], max_bytes: int) -> dict[str, bytes]:
    """Read back the regular files at ``paths`` (relative) after the run, at most ``max_bytes`` in all.

    The program has run, so every component is opened without following links and the last must be
    a regular file: a link the program left points nowhere outside.  Missing, unreadable or
    non-regular entries, and files past the budget, are left out.
    """
    out: dict[str, bytes] = {}
    budget = max_bytes
    for path in paths:
        try:
            parts = check_path(path)
        except ValueError:
            continue
        data = _read_inside(workdir, parts, budget)
        if data is not None:
            out[path] = data
            budget -= len(data)
    return out


def _read_inside(workdir: str, parts: list[str], budget: int) -> bytes | None:
    fds: list[int] = []
    try:
        fds.append(os.open(workdir, _DIR))
        for part in parts[:-1]:
            fds.append(os.open(part, _DIR, dir_fd=fds[-1]))
        fd = os.open(parts[-1], _READ, dir_fd=fds[-1])
        fds.append(fd)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > budget:
            return None
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while size <= budget:
            chunk = os.read(fd, min(1 << 20, budget - size + 1))
            if not chunk:
                return b''.join(chunks)
            chunks.append(chunk)
            size += len(chunk)
        return None  # grew past the budget while read
    except OSError:
        return None
    finally:
        for fd in fds:
            os.close(fd)


def done_path(workdir: str) -> str:
    """Where warm Python reports the end of the execution in ``workdir``."""
    return f'{workdir}.done'


def make_done_fifo(ids: SlotIds, workdir: str, plan: dict[str, Any]) -> int:
    """Make the FIFO warm Python reports its end in (`judge.sandbox.zygote.warm`); its read end.

    Beside the work dir, not in it (programs list their directory), and writable only by the
    slot's uid, so that no other slot's program can end this execution early.
    """
    path = plan['done_path'] = done_path(workdir)
    try:
        os.mkfifo(path, 0o600)
    except FileExistsError:  # left by an execution that failed before its clean-up
        remove_entry(path)
        os.mkfifo(path, 0o600)
    give_to(ids, path)
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
