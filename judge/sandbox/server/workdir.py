"""An execution's files: what the server writes into a work dir, what it exports from it, and the
done FIFO of warm Python (`judge.sandbox.zygote.warm`).  Runs inside the slot server."""

from __future__ import annotations

import os
import shutil
from typing import Any, Protocol

from judge.sandbox.fdio import write_all
from judge.sandbox.server.cleanup import remove_entry

_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC


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


def write_files(ids: SlotIds, workdir: str, files: dict[str, str], imports: dict[str, str]) -> None:
    """Write the request's ``files`` (text) and copy its ``imports`` (host paths) into ``workdir``."""
    for name, text in files.items():
        check_name(name)
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
