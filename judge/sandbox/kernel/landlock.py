"""Landlock through ctypes: build a ruleset once, restrict each forked child with it.

A ruleset handles every filesystem right the running kernel's ABI knows (v1 base set, v2 REFER,
v3 TRUNCATE, v5 IOCTL_DEV), grants read+execute beneath the read paths and everything beneath the
write paths; with ABI >= 4 it can deny all TCP bind/connect, and with ABI >= 6 it scopes abstract
unix sockets and signals to the domain (docs/sandbox.md, "Seccomp and Landlock").  x86_64 and
aarch64 share syscall numbers.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat

from judge.sandbox.kernel import libc
from judge.sandbox.lazylog import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:  # imported by the warm parents: see `judge.sandbox.fdio`
    from collections.abc import Sequence

logger = get_logger('judge.sandbox.kernel.landlock')

SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1

ACCESS_FS_EXECUTE = 1 << 0
ACCESS_FS_WRITE_FILE = 1 << 1
ACCESS_FS_READ_FILE = 1 << 2
ACCESS_FS_READ_DIR = 1 << 3
# bits 4-12 (remove dir/file, make char/dir/reg/sock/fifo/block/sym) are only ever handled as a set
ACCESS_FS_V1 = (1 << 13) - 1
"""The 13 rights of ABI 1."""
ACCESS_FS_REFER = 1 << 13  # ABI 2
ACCESS_FS_TRUNCATE = 1 << 14  # ABI 3
ACCESS_FS_IOCTL_DEV = 1 << 15  # ABI 5

ACCESS_NET_BIND_TCP = 1 << 0  # ABI 4
ACCESS_NET_CONNECT_TCP = 1 << 1  # ABI 4

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

READ_EXEC_ACCESS = ACCESS_FS_EXECUTE | ACCESS_FS_READ_FILE | ACCESS_FS_READ_DIR
# Rights that make sense on a non-directory; the kernel rejects the others in a rule for a file.
FILE_ACCESS = ACCESS_FS_EXECUTE | ACCESS_FS_WRITE_FILE | ACCESS_FS_READ_FILE | ACCESS_FS_TRUNCATE | ACCESS_FS_IOCTL_DEV


def handled_fs_access(abi: int) -> int:
    """Every filesystem access right Landlock ABI *abi* supports."""
    if abi < 1:
        return 0
    mask = ACCESS_FS_V1
    if abi >= 2:
        mask |= ACCESS_FS_REFER
    if abi >= 3:
        mask |= ACCESS_FS_TRUNCATE
    if abi >= 5:
        mask |= ACCESS_FS_IOCTL_DEV
    return mask


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ('handled_access_fs', ctypes.c_uint64),
        ('handled_access_net', ctypes.c_uint64),
        ('scoped', ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [('allowed_access', ctypes.c_uint64), ('parent_fd', ctypes.c_int32)]


def abi_version() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is unsupported or disabled."""
    version = libc.syscall(
        ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET),
        ctypes.c_void_p(None),
        ctypes.c_size_t(0),
        ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION),
    )
    return max(int(version), 0)


class HeldPaths(dict[str, int]):
    """Paths opened once (``O_PATH`` descriptors, -1: missing), for callers that build many rulesets."""


def _add_path_rule(ruleset_fd: int, path: str, access: int, held: HeldPaths | None = None) -> bool:
    fd = -1 if held is None else held.get(path, -2)
    if fd == -2 or held is None:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            fd = -1
        if held is not None:
            held[path] = fd
    if fd < 0:
        logger.debug('landlock: skipping missing path %s', path)
        return False
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= FILE_ACCESS
        attr = _PathBeneathAttr(access, fd)
        result = libc.syscall(
            ctypes.c_long(SYS_LANDLOCK_ADD_RULE),
            ctypes.c_int(ruleset_fd),
            ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
            ctypes.byref(attr),
            ctypes.c_uint32(0),
        )
        if result != 0:
            libc.raise_errno(f'landlock_add_rule({path!r})')
    finally:
        if held is None:
            os.close(fd)
    return True


def build_ruleset(
    read_paths: Sequence[str],
    write_paths: Sequence[str],
    *,
    deny_tcp: bool = True,
    scope: bool = True,
    held: HeldPaths | None = None,
) -> int:
    """Create a ruleset fd (close-on-exec) allowing read+execute beneath *read_paths* and full access
    beneath *write_paths*; everything else on the filesystem is denied once a process restricts itself.

    ``deny_tcp`` (ABI >= 4) denies every TCP bind/connect; ``scope`` (ABI >= 6) confines abstract unix
    sockets and signals to the domain.  Paths that do not exist are skipped.  Raises OSError when
    Landlock is unavailable.  Call once in the parent; the fd must stay open for `restrict_self`.
    ``held``: the read paths' descriptors kept open between calls (the session host builds a ruleset
    per session).
    """
    abi = abi_version()
    if abi < 1:
        raise OSError(errno.EOPNOTSUPP, 'Landlock is not supported by this kernel')
    fs_mask = handled_fs_access(abi)
    attr = _RulesetAttr(fs_mask, 0, 0)
    size = 8
    if abi >= 4:
        size = 16
        if deny_tcp:
            attr.handled_access_net = ACCESS_NET_BIND_TCP | ACCESS_NET_CONNECT_TCP
    if abi >= 6:
        size = 24
        if scope:
            attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
    fd = int(
        libc.syscall(
            ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
        )
    )
    if fd < 0:
        libc.raise_errno('landlock_create_ruleset')
    try:
        for path in read_paths:
            _add_path_rule(fd, path, READ_EXEC_ACCESS & fs_mask, held)
        for path in write_paths:
            _add_path_rule(fd, path, fs_mask)
    except BaseException:
        os.close(fd)
        raise
    logger.debug('landlock ruleset fd %d (ABI %d): read %s, write %s', fd, abi, list(read_paths), list(write_paths))
    return fd


def restrict_self(ruleset_fd: int) -> None:
    """Set no_new_privs (idempotent) and enforce the ruleset on the calling thread; OSError on failure."""
    libc.set_no_new_privs()
    if libc.syscall(ctypes.c_long(SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset_fd), ctypes.c_uint32(0)) != 0:
        libc.raise_errno('landlock_restrict_self')
