"""The seccomp filter installed in a forked child (`judge.sandbox.kernel.seccomp.install`): what it refuses,
what it lets through, and x32 syscalls killed (`tests.support.forked`: the test process is never filtered)."""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from judge.sandbox.kernel import namespaces, seccomp
from tests.support.forked import Send, errno_of, raw_syscall, run_in_child

native_only = pytest.mark.skipif(seccomp.native_arch() not in seccomp.ARCHES, reason='no syscall table')


@native_only
def test_seccomp_install_in_child(tmp_path: Path) -> None:
    program = seccomp.build_filter()
    table = seccomp.ARCHES[seccomp.native_arch()][1]

    def body(send: Send) -> None:
        seccomp.install(program)
        out: dict[str, Any] = {
            'inet': errno_of(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM)),
            'inet6': errno_of(lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)),
            'netlink': errno_of(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)),
            'unix': errno_of(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()),
            'unshare': errno_of(lambda: namespaces.unshare(namespaces.CLONE_NEWNS)),
            # invalid on purpose (NEWNS|CLONE_FS is EINVAL), so nothing is created if the filter fails
            'clone_ns': raw_syscall(table['clone'], namespaces.CLONE_NEWNS | 0x200 | signal.SIGCHLD, 0, 0, 0, 0),
            'clone3': raw_syscall(table['clone3'], 0, 0),
            'ptrace': raw_syscall(table['ptrace'], -1, 0, 0, 0),
            'mount': raw_syscall(table['mount'], 0, ctypes.addressof(ctypes.create_string_buffer(b'/nx')), 0, 0, 0),
            'bpf': raw_syscall(table['bpf'], -1, 0, 0),
            'io_uring': raw_syscall(table['io_uring_setup'], 0, 0),
            'personality_query': raw_syscall(table['personality'], 0xFFFFFFFF),
            'personality_set': raw_syscall(table['personality'], 0x0040000),
            'no_new_privs': '\nNoNewPrivs:\t1' in Path('/proc/self/status').read_text(),
            'seccomp_mode': '\nSeccomp:\t2' in Path('/proc/self/status').read_text(),
        }
        path = tmp_path / 'io.txt'
        path.write_text('hello')
        out['file_io'] = path.read_text() == 'hello'
        a, b = socket.socketpair()
        a.sendall(b'x')
        out['socketpair'] = b.recv(1) == b'x'
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        out['fork_exit'] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        seen: list[int] = []
        thread = threading.Thread(target=lambda: seen.append(threading.get_native_id()))
        thread.start()
        thread.join(5)
        out['thread_ran'] = len(seen) == 1
        send(out)

    msg, code = run_in_child(body)
    assert code == 0
    assert msg == {
        'inet': errno.EPERM,
        'inet6': errno.EPERM,
        'netlink': errno.EPERM,
        'unix': 0,
        'unshare': errno.EPERM,
        'clone_ns': -errno.EPERM,
        'clone3': -errno.ENOSYS,
        'ptrace': -errno.EPERM,
        'mount': -errno.EPERM,
        'bpf': -errno.EPERM,
        'io_uring': -errno.EPERM,
        'personality_query': 0,
        'personality_set': -errno.EPERM,
        'no_new_privs': True,
        'seccomp_mode': True,
        'file_io': True,
        'socketpair': True,
        'fork_exit': 7,
        'thread_ran': True,
    }


@pytest.mark.skipif(seccomp.native_arch() != 'x86_64', reason='x32 exists on x86_64 only')
def test_seccomp_kills_x32_syscalls() -> None:
    program = seccomp.build_filter()

    def body(send: Send) -> None:
        seccomp.install(program)
        raw_syscall(0x40000000 | 39)  # x32 getpid
        send({'survived': True})

    msg, code = run_in_child(body)
    assert msg is None
    assert code == -signal.SIGSYS
