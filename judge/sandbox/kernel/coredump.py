"""No crash of a submission reaches a core-dump helper on the host: the core limit of 1, and the host's
``core_pattern`` checked when a slot starts.

The kernel decides a dump from the crashing process's *soft* ``RLIMIT_CORE`` (fs/coredump.c):

* a file pattern (``core``, ``/var/crash/%e``): no file unless the limit is at least the binary
  format's ``min_coredump`` (a page for ELF);
* a pipe pattern (``|/usr/share/apport/apport ...``, ``|.../systemd-coredump ...``): the limit is
  not applied, except that exactly 1 aborts the dump before the helper is started (the value the
  kernel gives every helper, to stop recursive dumps);
* a socket pattern (``@/path``, ``@@/path``; Linux 6.16 and later): the limit is not looked at and
  the crash connects to a socket in the host's mount namespace.  No per-process setting stops that
  (``PR_SET_DUMPABLE`` is reset by every ``execve``), so a slot refuses such a host
  (`judge.sandbox.server.jail`) unless unsafe tiers are allowed.

Each warm parent sets ``RLIMIT_CORE`` to (1, 1) before it installs the seccomp filter, which then
refuses every change to it (`judge.sandbox.kernel.seccomp_args`): the hard limit cannot be raised,
and the soft one cannot be lowered to 0, which would let a pipe dump through.  Every child inherits
the limit, and it holds across ``execve``.
"""

from __future__ import annotations

import resource

CORE_LIMIT = 1
"""Soft and hard ``RLIMIT_CORE`` of every warm parent and child (bytes)."""
CORE_PATTERN = '/proc/sys/kernel/core_pattern'


def forbid_core_dumps() -> None:
    """Set the calling process's ``RLIMIT_CORE`` to `CORE_LIMIT`, soft and hard (its children inherit it)."""
    resource.setrlimit(resource.RLIMIT_CORE, (CORE_LIMIT, CORE_LIMIT))


def pattern_kind(pattern: str) -> str:
    """Where the kernel sends a dump for ``pattern``: ``'pipe'``, ``'socket'`` or ``'file'``."""
    if pattern.startswith('|'):
        return 'pipe'
    if pattern.startswith('@'):
        return 'socket'
    return 'file'


def host_pattern_kind(path: str = CORE_PATTERN) -> str:
    """`pattern_kind` of the host's ``kernel.core_pattern`` (the sysctl is global, not namespaced)."""
    with open(path, encoding='utf-8', errors='replace') as f:
        return pattern_kind(f.read().strip())
