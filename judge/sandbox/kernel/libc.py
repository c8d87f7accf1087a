"""The C library through ctypes, loaded once for the sandbox's system-call wrappers.

`namespaces`, `seccomp` and `landlock` call the kernel through these objects: the prototypes are set
up here, at import, so that a freshly forked child only makes the calls (building ctypes objects after
a fork would cost more than the calls themselves).
"""

from __future__ import annotations

import ctypes
import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # imported by the warm parents: see `judge.sandbox.fdio`
    from typing import NoReturn

PR_SET_NO_NEW_PRIVS = 38

libc = ctypes.CDLL(None, use_errno=True)
"""The process's C library; its functions set ``errno`` for `raise_errno`."""

prctl = libc.prctl
prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
prctl.restype = ctypes.c_int

syscall = libc.syscall
"""syscall(2) for calls glibc does not wrap; pass every argument as a ctypes value."""
syscall.restype = ctypes.c_long


def raise_errno(what: str) -> NoReturn:
    """Raise OSError for the ``errno`` the last libc call left, naming the call *what*."""
    err = ctypes.get_errno()
    raise OSError(err, f'{what}: {os.strerror(err)}')


def check(result: int, what: str) -> None:
    """`raise_errno` unless the libc call *what* returned 0."""
    if result != 0:
        raise_errno(what)


def set_no_new_privs() -> None:
    """PR_SET_NO_NEW_PRIVS: execve can no longer grant privileges (needed for seccomp and Landlock)."""
    check(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 'prctl(PR_SET_NO_NEW_PRIVS)')
