"""The seccomp filter installed in a forked child (`judge.sandbox.kernel.seccomp.install`): what it refuses,
what it lets through, x32 syscalls killed, and the rules for shared files, caches and the core limit
(`judge.sandbox.kernel.seccomp_args`) against the same calls unfiltered (`tests.support.forked`: the test
process is never filtered)."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import mmap
import os
import resource
import signal
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from judge.sandbox.kernel import coredump, namespaces, seccomp
from judge.sandbox.kernel import seccomp_args as rules
from tests.support.forked import Child, Send, errno_of, libc, raw_syscall, run_in_child

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


# --------------------------------------------------------------------------------------------------
# shared files and caches (judge.sandbox.kernel.seccomp_args): each rule against the same calls unfiltered


def _holder(path: Path, filtered: bool) -> Child:
    """A child that takes every kind of lock on ``path`` (filtered or not), reports, and keeps them."""
    program = seccomp.build_filter()

    def body(send: Send) -> None:
        if filtered:
            seccomp.install(program)
        flock_fd, posix_fd, ofd_fd = (os.open(path, os.O_RDWR) for _ in range(3))
        taken = {
            'flock': errno_of(lambda: fcntl.flock(flock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)),
            'posix': errno_of(lambda: fcntl.fcntl(posix_fd, fcntl.F_SETLK, _flock_struct(fcntl.F_WRLCK))),
            'ofd': errno_of(lambda: fcntl.fcntl(ofd_fd, rules.F_OFD_SETLK, _flock_struct(fcntl.F_RDLCK, 100))),
        }
        send(taken)
        time.sleep(30)  # holding whatever it got until the test kills it

    return Child(body)


def _flock_struct(kind: int, start: int = 0) -> bytes:
    """struct flock {short l_type, l_whence; off_t l_start, l_len; pid_t l_pid} for ``kind`` over 10 bytes."""
    return struct.pack('hhqqi4x', kind, os.SEEK_SET, start, 10, 0)


@native_only
@pytest.mark.parametrize('filtered', [False, True], ids=['unfiltered', 'filtered'])
def test_locks_taken_under_the_filter_are_invisible_to_other_processes(tmp_path: Path, filtered: bool) -> None:
    path = tmp_path / 'shared'
    path.write_bytes(b'x' * 4096)
    with _holder(path, filtered) as holder:
        assert holder.recv() == {'flock': 0, 'posix': 0, 'ofd': 0}  # granted either way
        fd = os.open(path, os.O_RDWR)
        try:
            flock_probe = errno_of(lambda: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB))
            posix = struct.unpack('hhqqi4x', fcntl.fcntl(fd, fcntl.F_GETLK, _flock_struct(fcntl.F_WRLCK)))
            ofd = struct.unpack('hhqqi4x', fcntl.fcntl(fd, rules.F_OFD_GETLK, _flock_struct(fcntl.F_WRLCK, 100)))
        finally:
            os.close(fd)
        listed = f':{os.stat(path).st_ino} ' in Path('/proc/locks').read_text()
    if filtered:  # nothing was locked: the probes see no lock, /proc/locks lists none
        assert (flock_probe, posix[0], ofd[0], listed) == (0, fcntl.F_UNLCK, fcntl.F_UNLCK, False)
    else:  # the control: the same probes see every lock
        assert flock_probe == errno.EWOULDBLOCK and posix[0] == fcntl.F_WRLCK and ofd[0] == fcntl.F_RDLCK
        assert listed


@native_only
def test_watches_leases_and_cache_probes_are_refused_under_the_filter(tmp_path: Path) -> None:
    program = seccomp.build_filter()
    table = seccomp.ARCHES[seccomp.native_arch()][1]
    path = tmp_path / 'data'
    path.write_bytes(b'y' * 8192)

    def probes() -> dict[str, Any]:
        fd = os.open(path, os.O_RDONLY)
        dirfd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
        span, stat = (ctypes.c_uint64 * 2)(0, 8192), (ctypes.c_uint64 * 5)()  # cachestat_range, cachestat
        out = {
            'inotify': raw_syscall(table['inotify_init1'], 0),
            'fanotify': raw_syscall(table['fanotify_init'], 0x200, 0),  # FAN_REPORT_FID: allowed unprivileged
            'dnotify': errno_of(lambda: fcntl.fcntl(dirfd, rules.F_NOTIFY, 0x1)),
            'lease': errno_of(lambda: fcntl.fcntl(fd, rules.F_SETLEASE, fcntl.F_RDLCK)),
            'nowait': errno_of(lambda: os.preadv(fd, [bytearray(4096)], 0, os.RWF_NOWAIT)),
            'dontcache': raw_syscall(table['preadv2'], fd, 0, 0, 0, 0, rules.RWF_DONTCACHE),
            'cachestat': raw_syscall(table['cachestat'], fd, ctypes.addressof(span), ctypes.addressof(stat), 0),
            'io_setup': raw_syscall(table['io_setup'], 8, ctypes.addressof(ctypes.c_ulong(0))),
            'fadvise_dontneed': errno_of(lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)),
            'fadvise_willneed': errno_of(lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)),
            'getlease': fcntl.fcntl(fd, rules.F_GETLEASE),
            # the 32-bit F_SETLK64/F_SETLKW64 numbers set no lock on a 64-bit kernel: nothing to filter
            'setlk64': errno_of(lambda: fcntl.fcntl(fd, 13, struct.pack('hhqqi4x', fcntl.F_RDLCK, 0, 0, 0, 0))),
            'setlkw64': errno_of(lambda: fcntl.fcntl(fd, 14, struct.pack('hhqqi4x', fcntl.F_RDLCK, 0, 0, 0, 0))),
        }
        with mmap.mmap(fd, 8192, prot=mmap.PROT_READ) as mapping:
            out['pageout'] = errno_of(lambda: mapping.madvise(rules.MADV_PAGEOUT))
            out['cold'] = errno_of(lambda: mapping.madvise(rules.MADV_COLD))
            out['willneed'] = errno_of(lambda: mapping.madvise(mmap.MADV_WILLNEED))
        return out

    def body(send: Send) -> None:
        seccomp.install(program)
        send(probes())

    msg, code = run_in_child(body)
    assert code == 0
    assert msg == {
        'inotify': -errno.ENOSYS,
        'fanotify': -errno.EPERM,
        'dnotify': errno.EINVAL,
        'lease': errno.EINVAL,
        'nowait': errno.EOPNOTSUPP,
        'dontcache': -errno.EOPNOTSUPP,
        'cachestat': -errno.ENOSYS,
        'io_setup': -errno.ENOSYS,
        'fadvise_dontneed': 0,
        'fadvise_willneed': 0,
        'getlease': fcntl.F_UNLCK,
        'setlk64': errno.EINVAL,
        'setlkw64': errno.EINVAL,
        'pageout': 0,
        'cold': 0,
        'willneed': 0,
    }

    def control(send: Send) -> None:  # the kernel without the filter: watches and probes work
        signal.signal(signal.SIGIO, signal.SIG_IGN)  # what the directory notification sends
        out = probes()
        os.close(out['inotify'])
        send({'inotify': out['inotify'] >= 0, 'nowait': out['nowait'], 'cachestat': out['cachestat']})

    assert run_in_child(control) == ({'inotify': True, 'nowait': 0, 'cachestat': 0}, 0)  # cached pages: no EAGAIN


def _resident_pages(path: Path) -> int:
    """Pages of ``path`` in the page cache (mincore on a private mapping; the test process owns the file)."""
    with path.open('rb') as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) as mapping:
        vector = (ctypes.c_ubyte * ((len(mapping) + mmap.PAGESIZE - 1) // mmap.PAGESIZE))()
        anchor = ctypes.c_char.from_buffer(mapping)
        try:
            assert libc.mincore(ctypes.c_void_p(ctypes.addressof(anchor)), ctypes.c_size_t(len(mapping)), vector) == 0
        finally:
            del anchor
    return sum(v & 1 for v in vector)


@native_only
@pytest.mark.parametrize('filtered', [False, True], ids=['unfiltered', 'filtered'])
def test_advice_under_the_filter_evicts_nothing(tmp_path: Path, filtered: bool) -> None:
    path = tmp_path / 'evict-me'
    path.write_bytes(os.urandom(1 << 20))
    program = seccomp.build_filter()

    def body(send: Send) -> None:
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)  # clean pages can be dropped
        os.read(fd, 1 << 20)  # all in the page cache
        if filtered:
            seccomp.install(program)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        send({})

    assert run_in_child(body) == ({}, 0)
    resident = _resident_pages(path)  # of 256; the host may drop a page or two of its own meanwhile
    if filtered:
        assert resident >= 240
    elif resident > 16:
        pytest.skip(f'this file system keeps its pages (tmpfs?): {resident} resident')  # the control did not evict


@native_only
def test_the_core_limit_cannot_be_changed_under_the_filter_even_after_execve() -> None:
    program = seccomp.build_filter()
    table = seccomp.ARCHES[seccomp.native_arch()][1]

    def body(send: Send) -> None:
        coredump.forbid_core_dumps()
        seccomp.install(program)
        zero = (ctypes.c_uint64 * 2)(0, 0)
        read = (ctypes.c_uint64 * 2)()
        out: dict[str, Any] = {
            'setrlimit': raw_syscall(table['setrlimit'], resource.RLIMIT_CORE, ctypes.addressof(zero)),
            'prlimit_set': raw_syscall(table['prlimit64'], 0, resource.RLIMIT_CORE, ctypes.addressof(zero), 0),
            'prlimit_read': raw_syscall(table['prlimit64'], 0, resource.RLIMIT_CORE, 0, ctypes.addressof(read)),
            'other_limit': errno_of(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))),
        }
        out['read'] = list(read)
        out['prctl_dumpable'] = int(libc.prctl(4, 1, 0, 0, 0))  # PR_SET_DUMPABLE 1: allowed, and beside the point
        out['limit'] = list(resource.getrlimit(resource.RLIMIT_CORE))
        script = "grep 'core file' /proc/self/limits; ulimit -S -c 0 2>/dev/null; echo lowered=$?"
        out['after_exec'] = subprocess.run(['/bin/bash', '-c', script], capture_output=True, text=True).stdout.split()
        send(out)

    msg, code = run_in_child(body)
    assert code == 0 and msg is not None
    assert msg['setrlimit'] == msg['prlimit_set'] == -errno.EPERM
    assert msg['prlimit_read'] == 0 and msg['read'] == [1, 1] and msg['limit'] == [1, 1]
    assert msg['other_limit'] == 0 and msg['prctl_dumpable'] == 0
    assert msg['after_exec'] == ['Max', 'core', 'file', 'size', '1', '1', 'bytes', 'lowered=1'], msg['after_exec']
