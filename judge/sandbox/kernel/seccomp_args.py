"""The seccomp filter's rules for shared files, shared caches and the core-dump limit.

Every slot reads the same host files (the read-only root, ``/dev/null``, ``/sys``), so a lock, a
watch or the page cache of any of them would be a channel between concurrent slots, and a way to
watch what a neighbour opens.  `judge.sandbox.kernel.seccomp` sends these calls here
(docs/sandbox.md, "Seccomp and Landlock"):

* locks: ``flock`` and the ``fcntl`` commands that set a lock (POSIX and OFD) answer 0 and lock
  nothing, so no sandboxed process ever holds a lock another one could see or wait for; honest
  single-process users (sqlite, the go command's build cache) go on as if they held it.
  ``F_GETLK`` runs and finds none.  ``F_SETLEASE`` and ``F_NOTIFY`` (dnotify) get EINVAL, as on a
  kernel with leases or dnotify turned off.
* watches: ``inotify_*`` get ENOSYS (callers fall back to polling), ``fanotify_*`` EPERM.
* the page cache: ``posix_fadvise(POSIX_FADV_DONTNEED)`` and ``madvise(MADV_COLD / MADV_PAGEOUT)``
  answer 0 and evict nothing (advice the kernel may ignore anyway); ``preadv2``/``pwritev2`` with
  ``RWF_NOWAIT`` or ``RWF_DONTCACHE`` get EOPNOTSUPP, as on a file system without them;
  ``cachestat`` and Linux AIO (``io_setup``, whose requests carry the same flags) get ENOSYS.
  ``mincore`` stays: for a file the caller could not open for writing the kernel reports every page
  resident (Linux commit 134fca9063ad, 2019).
* the core limit: ``setrlimit`` and ``prlimit64`` setting ``RLIMIT_CORE`` get EPERM (reading it
  works), so the limit of 1 the warm parent sets (`judge.sandbox.kernel.coredump`) holds after any
  ``execve``.

The syscall numbers are `judge.sandbox.kernel.seccomp`'s tables.
"""

from __future__ import annotations

import errno

from judge.sandbox.kernel.bpf import (
    BPF_JEQ_K,
    BPF_JSET_K,
    SECCOMP_RET_ALLOW,
    SECCOMP_RET_ERRNO,
    Assembler,
    arg_offset,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # imported by the warm parents: see `judge.sandbox.fdio`
    from collections.abc import Mapping

# fcntl commands (x86_64 and aarch64 share the generic values)
F_GETLK, F_SETLK, F_SETLKW = 5, 6, 7
F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW = 36, 37, 38
F_SETLEASE, F_GETLEASE, F_NOTIFY = 1024, 1025, 1026
LOCK_SETTERS = (F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW)
POSIX_FADV_DONTNEED = 4
MADV_COLD, MADV_PAGEOUT = 20, 21
RWF_NOWAIT, RWF_DONTCACHE = 0x08, 0x80
RLIMIT_CORE = 4

IGNORE = SECCOMP_RET_ERRNO | 0
"""The call returns 0 and does nothing."""

WHOLE_CALLS: Mapping[str, int] = {
    'flock': IGNORE,
    'inotify_init': SECCOMP_RET_ERRNO | errno.ENOSYS,
    'inotify_init1': SECCOMP_RET_ERRNO | errno.ENOSYS,
    'inotify_add_watch': SECCOMP_RET_ERRNO | errno.ENOSYS,
    'fanotify_init': SECCOMP_RET_ERRNO | errno.EPERM,
    'fanotify_mark': SECCOMP_RET_ERRNO | errno.EPERM,
    'cachestat': SECCOMP_RET_ERRNO | errno.ENOSYS,
    'io_setup': SECCOMP_RET_ERRNO | errno.ENOSYS,
}
"""Calls answered whatever their arguments (names missing from an arch's table do not exist there)."""

ARGUMENT_CALLS = ('fcntl', 'fadvise64', 'madvise', 'preadv2', 'pwritev2', 'setrlimit', 'prlimit64')
"""Calls whose arguments decide (each has a block in `emit_rules`)."""

_RETURNS = {
    'args.ignore': IGNORE,
    'args.eperm': SECCOMP_RET_ERRNO | errno.EPERM,
    'args.enosys': SECCOMP_RET_ERRNO | errno.ENOSYS,
    'args.einval': SECCOMP_RET_ERRNO | errno.EINVAL,
    'args.eopnotsupp': SECCOMP_RET_ERRNO | errno.EOPNOTSUPP,
}
_LABEL_OF = {action: label for label, action in _RETURNS.items()}


def emit_dispatch(a: Assembler, table: Mapping[str, int]) -> None:
    """Jumps from the syscall number (in the accumulator) to this module's answers and argument blocks."""
    for name, action in WHOLE_CALLS.items():
        if name in table:
            a.jump(BPF_JEQ_K, table[name], _LABEL_OF[action], 0)
    for name in ARGUMENT_CALLS:
        a.jump(BPF_JEQ_K, table[name], f'args.{name}', 0)


def emit_rules(a: Assembler) -> None:
    """The argument blocks `emit_dispatch` jumps to, and their answers; each block ends in ALLOW."""
    a.label('args.fcntl')  # fcntl(fd, cmd, arg)
    a.load(arg_offset(1))
    for cmd in LOCK_SETTERS:
        a.jump(BPF_JEQ_K, cmd, 'args.ignore', 0)
    a.jump(BPF_JEQ_K, F_SETLEASE, 'args.einval', 0)
    a.jump(BPF_JEQ_K, F_NOTIFY, 'args.einval', 0)
    a.ret(SECCOMP_RET_ALLOW)
    a.label('args.fadvise64')  # fadvise64(fd, offset, len, advice)
    a.load(arg_offset(3))
    a.jump(BPF_JEQ_K, POSIX_FADV_DONTNEED, 'args.ignore', 0)
    a.ret(SECCOMP_RET_ALLOW)
    a.label('args.madvise')  # madvise(addr, len, advice)
    a.load(arg_offset(2))
    a.jump(BPF_JEQ_K, MADV_COLD, 'args.ignore', 0)
    a.jump(BPF_JEQ_K, MADV_PAGEOUT, 'args.ignore', 0)
    a.ret(SECCOMP_RET_ALLOW)
    for name in ('preadv2', 'pwritev2'):  # (fd, iov, iovcnt, pos_l, pos_h, flags)
        a.label(f'args.{name}')
        a.load(arg_offset(5))
        a.jump(BPF_JSET_K, RWF_NOWAIT | RWF_DONTCACHE, 'args.eopnotsupp', 0)
        a.ret(SECCOMP_RET_ALLOW)
    a.label('args.setrlimit')  # setrlimit(resource, rlim)
    a.load(arg_offset(0))
    a.jump(BPF_JEQ_K, RLIMIT_CORE, 'args.eperm', 0)
    a.ret(SECCOMP_RET_ALLOW)
    a.label('args.prlimit64')  # prlimit64(pid, resource, new, old): only a new RLIMIT_CORE is refused
    a.load(arg_offset(1))
    a.jump(BPF_JEQ_K, RLIMIT_CORE, 0, 'args.allow')
    a.load(arg_offset(2))
    a.jump(BPF_JEQ_K, 0, 0, 'args.eperm')
    a.load(arg_offset(2, high=True))
    a.jump(BPF_JEQ_K, 0, 'args.allow', 'args.eperm')
    a.label('args.allow')
    a.ret(SECCOMP_RET_ALLOW)
    for label, action in _RETURNS.items():
        a.label(label)
        a.ret(action)
