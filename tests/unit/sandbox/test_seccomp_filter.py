"""The seccomp filter program (`judge.sandbox.kernel.seccomp.build_filter`), evaluated in Python: its syscall
tables against the kernel's headers and its decision for each syscall and argument (nothing installed)."""

from __future__ import annotations

import errno
import os
import re
import signal
import socket
from pathlib import Path

import pytest

from judge.sandbox.kernel import namespaces, seccomp
from tests.support.bpf_eval import run_bpf

EPERM_ACTION = seccomp.SECCOMP_RET_ERRNO | errno.EPERM


ENOSYS_ACTION = seccomp.SECCOMP_RET_ERRNO | errno.ENOSYS


def _header_numbers(path: str) -> dict[str, int]:
    text = Path(path).read_text()
    return {m.group(1): int(m.group(2)) for m in re.finditer(r'#define __NR_(\w+)\s+(\d+)\b', text)}


@pytest.mark.parametrize(
    ('arch', 'header'),
    [('x86_64', '/usr/include/x86_64-linux-gnu/asm/unistd_64.h'), ('aarch64', '/usr/include/asm-generic/unistd.h')],
)
def test_syscall_tables_match_kernel_headers(arch: str, header: str) -> None:
    if not os.path.exists(header):
        pytest.skip(f'{header} not installed')
    known = _header_numbers(header)
    table = seccomp.ARCHES[arch][1]
    checked = [name for name in table if name in known]
    assert len(checked) > 40
    assert {name: table[name] for name in checked} == {name: known[name] for name in checked}


def test_build_filter_rejects_unknown_arch() -> None:
    with pytest.raises(ValueError):
        seccomp.build_filter('mips')
    assert seccomp.build_filter(seccomp.native_arch()) == seccomp.build_filter()


@pytest.mark.parametrize('arch', ['x86_64', 'aarch64'])
def test_filter_decisions(arch: str) -> None:
    audit_arch, table, has_x32 = seccomp.ARCHES[arch]
    program = seccomp.build_filter(arch)
    assert len(program) % 8 == 0

    def decide(name: str, arg0: int = 0) -> int:
        return run_bpf(program, table[name], audit_arch, arg0)

    assert run_bpf(program, table['socket'], 0x40000003, 2) == seccomp.SECCOMP_RET_KILL_PROCESS  # i386
    read_nr = {'x86_64': 0, 'aarch64': 63}[arch]
    assert run_bpf(program, read_nr, audit_arch) == seccomp.SECCOMP_RET_ALLOW
    assert run_bpf(program, 0xFFFFFFFF, audit_arch) == seccomp.SECCOMP_RET_ALLOW  # syscall(-1): ENOSYS
    for name in seccomp.DENIED_SYSCALLS:
        if name in table:
            assert decide(name) == EPERM_ACTION, name
    assert decide('socket', socket.AF_UNIX) == seccomp.SECCOMP_RET_ALLOW
    # the kernel truncates socket()'s domain to int, so only the low 32 bits matter
    assert decide('socket', (1 << 32) | socket.AF_UNIX) == seccomp.SECCOMP_RET_ALLOW
    for family in (socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK, socket.AF_PACKET, (1 << 32) | socket.AF_INET):
        assert decide('socket', family) == EPERM_ACTION
    assert decide('clone', signal.SIGCHLD) == seccomp.SECCOMP_RET_ALLOW
    assert decide('clone', 0x003D0F00) == seccomp.SECCOMP_RET_ALLOW  # glibc's pthread_create flags
    for flag in (namespaces.CLONE_NEWNS, namespaces.CLONE_NEWUSER, namespaces.CLONE_NEWNET, namespaces.CLONE_NEWPID):
        assert decide('clone', flag | signal.SIGCHLD) == EPERM_ACTION
    assert decide('clone3') == ENOSYS_ACTION
    assert decide('personality', 0) == seccomp.SECCOMP_RET_ALLOW
    assert decide('personality', 0xFFFFFFFF) == seccomp.SECCOMP_RET_ALLOW
    assert decide('personality', 0x0040000) == EPERM_ACTION  # ADDR_NO_RANDOMIZE
    if has_x32:
        assert run_bpf(program, 0x40000000 | 39, audit_arch) == seccomp.SECCOMP_RET_KILL_PROCESS


def test_seccomp_install_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        seccomp.install(b'\x00' * 7)
