"""Removing what an execution wrote, whatever its shape: depth, width and names do not matter.

`remove_tree` walks a tree iteratively, one directory descriptor at a time, with every step
relative to a descriptor (no path is ever longer than one name, so depth and ``PATH_MAX`` do not
matter), never following a symlink, and visiting each entry once.  It is meant for trees that no
live process can change any more: the slot's processes are all dead when the server cleans up.
Stdlib only (it runs inside the slot server).
"""

from __future__ import annotations

import errno
import os
import stat

from judge.sandbox.errors import CleanupError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_dir(name: str, dir_fd: int | None) -> int | None:
    """A descriptor of directory ``name``; None when it is gone or is not a directory (then unlinked)."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except PermissionError:  # not root (the unsafe tier) and a directory without rights: ours, so fix it
        os.chmod(name, 0o700, dir_fd=dir_fd)
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as e:
        if e.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
    os.unlink(name, dir_fd=dir_fd)  # a symlink or a file: remove the entry itself, never its target
    return None


def _empty_files(fd: int) -> tuple[list[str], int]:
    """Unlink every non-directory entry of the directory ``fd``; its subdirectories' names and how
    many entries were unlinked."""
    subdirs, unlinked = [], 0
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                subdirs.append(entry.name)
                continue
            try:
                os.unlink(entry.name, dir_fd=fd)
            except FileNotFoundError:
                continue
            except PermissionError:  # not root (the unsafe tier): make the directory ours first
                os.chmod(fd, 0o700)
                os.unlink(entry.name, dir_fd=fd)
            unlinked += 1
    return subdirs, unlinked


def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def remove_tree(path: str, *, keep_root: bool = False) -> int:
    """Remove ``path`` and everything beneath it (with ``keep_root``, only what is beneath it).

    Memory grows with the number of directories, never with depth on the stack; one descriptor is
    open at a time.  Returns how many entries were removed.  Raises `CleanupError` when something
    could not be removed, or when a parent is not the directory it was (the tree changed under us).
    """
    try:
        fd = _open_dir(path, None)
    except OSError as e:
        raise CleanupError(e.errno, f'cannot open {path!r}: {e.strerror}') from e
    if fd is None:
        return 1 if not keep_root else 0
    names: list[str] = []  # the way down from ``path``: one name per level
    ancestors: list[tuple[int, int]] = []  # (device, inode) of each directory above the current one
    try:
        subdirs, removed = _empty_files(fd)
        pending = [subdirs]  # per level: subdirectories still to visit
        while pending:
            if pending[-1]:
                name = pending[-1].pop()
                child = _open_dir(name, fd)
                if child is None:
                    removed += 1
                    continue
                ancestors.append(_identity(fd))
                os.close(fd)
                fd = child
                names.append(name)
                subdirs, unlinked = _empty_files(fd)
                pending.append(subdirs)
                removed += unlinked
                continue
            pending.pop()
            if not names:
                break
            parent = os.open('..', _DIR_FLAGS & ~os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = parent
            if _identity(fd) != ancestors.pop():
                raise CleanupError(errno.ESTALE, f'{path!r} changed while it was being removed')
            os.rmdir(names.pop(), dir_fd=fd)
            removed += 1
    except CleanupError:
        raise
    except OSError as e:
        raise CleanupError(e.errno, f'cannot remove {path!r}: {e}') from e
    finally:
        os.close(fd)
    if not keep_root:
        try:
            os.rmdir(path)
        except FileNotFoundError:
            pass
        except OSError as e:
            raise CleanupError(e.errno, f'cannot remove {path!r}: {e.strerror}') from e
        removed += 1
    return removed


def remove_entry(path: str) -> None:
    """Remove ``path`` whatever it is (a file, a symlink, a FIFO or a whole tree); nothing if it is gone."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        remove_tree(path)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
