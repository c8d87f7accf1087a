"""The filter's rules for shared files, shared caches and the core limit (`judge.sandbox.kernel.seccomp_args`),
evaluated in Python for each architecture: what each call and argument gets (nothing installed)."""

from __future__ import annotations

import errno

import pytest

from judge.sandbox.kernel import seccomp
from judge.sandbox.kernel import seccomp_args as rules
from tests.support.bpf_eval import run_bpf

ALLOW = seccomp.SECCOMP_RET_ALLOW
IGNORE = seccomp.SECCOMP_RET_ERRNO  # errno 0: the call returns 0 without running


def errno_action(code: int) -> int:
    return seccomp.SECCOMP_RET_ERRNO | code


class Decider:
    """The filter of one architecture: ``decide(name, *args)`` is its action for that call."""

    def __init__(self, arch: str) -> None:
        self.audit_arch, self.table, _ = seccomp.ARCHES[arch]
        self.program = seccomp.build_filter(arch)

    def __call__(self, name: str, *args: int) -> int:
        return run_bpf(self.program, self.table[name], self.audit_arch, *args)


@pytest.fixture(params=sorted(seccomp.ARCHES))
def decide(request: pytest.FixtureRequest) -> Decider:
    return Decider(request.param)


def test_every_rule_names_a_call_of_both_tables() -> None:
    for _, table, _ in seccomp.ARCHES.values():
        assert set(rules.ARGUMENT_CALLS) <= set(table)
    assert set(rules.WHOLE_CALLS) - set(seccomp.SYSCALLS_AARCH64) == {'inotify_init'}  # x86_64 only
    assert set(rules.WHOLE_CALLS) <= set(seccomp.SYSCALLS_X86_64)


def test_locks_are_granted_and_hold_nothing(decide: Decider) -> None:
    for operation in (1, 2, 8, 1 | 4, 2 | 4):  # LOCK_SH, LOCK_EX, LOCK_UN, with LOCK_NB
        assert decide('flock', 3, operation) == IGNORE
    for cmd in rules.LOCK_SETTERS:
        assert decide('fcntl', 3, cmd, 0x7FFF0000) == IGNORE
        assert decide('fcntl', 3, (1 << 32) | cmd) == IGNORE  # the kernel reads cmd as an unsigned int
    for cmd in (rules.F_GETLK, rules.F_OFD_GETLK, rules.F_GETLEASE, 0, 1, 2, 3, 4, 1030, 1031, 1033):
        assert decide('fcntl', 3, cmd) == ALLOW, cmd  # probes run (and find no sandboxed lock), the rest as ever
    assert decide('fcntl', 3, rules.F_SETLEASE, 0) == errno_action(errno.EINVAL)
    assert decide('fcntl', 3, rules.F_NOTIFY, 0x80000000) == errno_action(errno.EINVAL)


def test_watches_are_refused(decide: Decider) -> None:
    for name in ('inotify_init1', 'inotify_add_watch'):
        assert decide(name) == errno_action(errno.ENOSYS)
    if 'inotify_init' in decide.table:
        assert decide('inotify_init') == errno_action(errno.ENOSYS)
    assert decide('fanotify_init', 0x200, 0) == errno_action(errno.EPERM)  # FAN_REPORT_FID: the unprivileged kind
    assert decide('fanotify_mark') == errno_action(errno.EPERM)


def test_the_page_cache_cannot_be_evicted_or_probed(decide: Decider) -> None:
    assert decide('fadvise64', 3, 0, 0, rules.POSIX_FADV_DONTNEED) == IGNORE
    for advice in (0, 1, 2, 3, 5):  # NORMAL, RANDOM, SEQUENTIAL, WILLNEED, NOREUSE
        assert decide('fadvise64', 3, 0, 0, advice) == ALLOW, advice
    for advice in (rules.MADV_COLD, rules.MADV_PAGEOUT):
        assert decide('madvise', 0x7F0000000000, 4096, advice) == IGNORE
    for advice in (0, 3, 4, 8, 14, 15, 22):  # NORMAL, WILLNEED, DONTNEED, FREE, (NO)HUGEPAGE, POPULATE_READ
        assert decide('madvise', 0x7F0000000000, 4096, advice) == ALLOW, advice
    for name in ('preadv2', 'pwritev2'):
        for flags in (rules.RWF_NOWAIT, rules.RWF_DONTCACHE, rules.RWF_NOWAIT | 0x1):
            assert decide(name, 3, 0, 1, 0, 0, flags) == errno_action(errno.EOPNOTSUPP), (name, flags)
        for flags in (0, 0x1, 0x2, 0x4, 0x10):  # HIPRI, DSYNC, SYNC, APPEND
            assert decide(name, 3, 0, 1, 0, 0, flags) == ALLOW, (name, flags)
    assert decide('cachestat', 3, 0, 0, 0) == errno_action(errno.ENOSYS)
    assert decide('io_setup', 8, 0) == errno_action(errno.ENOSYS)  # Linux AIO: requests carry RWF_NOWAIT


def test_the_core_limit_cannot_be_changed_but_can_be_read(decide: Decider) -> None:
    eperm = errno_action(errno.EPERM)
    new = 0x7FFE12345678
    assert decide('setrlimit', rules.RLIMIT_CORE, new) == eperm
    assert decide('setrlimit', (1 << 32) | rules.RLIMIT_CORE, new) == eperm
    for resource in (0, 1, 3, 7):  # CPU, FSIZE, STACK, NOFILE
        assert decide('setrlimit', resource, new) == ALLOW
        assert decide('prlimit64', 0, resource, new, 0) == ALLOW
    assert decide('prlimit64', 0, rules.RLIMIT_CORE, 0, new) == ALLOW  # getrlimit
    assert decide('prlimit64', 0, rules.RLIMIT_CORE, new, 0) == eperm
    assert decide('prlimit64', 0, rules.RLIMIT_CORE, new, new) == eperm
    assert decide('prlimit64', 77, rules.RLIMIT_CORE, 1 << 32, 0) == eperm  # a pointer above 4 GiB
    assert decide('prlimit64', 0, (1 << 32) | rules.RLIMIT_CORE, new, 0) == eperm


def test_the_base_policy_is_unchanged_around_the_rules(decide: Decider) -> None:
    assert decide('socket', 2) == errno_action(errno.EPERM)
    assert decide('socket', 1) == ALLOW
    assert decide('clone3') == errno_action(errno.ENOSYS)
    assert decide('mount') == errno_action(errno.EPERM)
