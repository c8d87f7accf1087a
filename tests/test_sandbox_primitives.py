"""Tests for the low-level isolation primitives in judge.sandbox (seccomp, landlock, cgroups, namespaces).

Every restriction is applied in a forked child that reports back as JSON lines over a pipe; the test
process itself is never restricted.  Mount helpers run only after the child has entered a new mount
namespace (checked), and fork/memory bombs run only inside a slot cgroup with pids/memory limits, as
a non-root uid.  No test ever calls kill(-1).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import re
import select
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from judge.sandbox.kernel import cgroups, landlock, namespaces, seccomp

Send = Callable[[dict[str, Any]], None]
UNPRIVILEGED_UID = 61999
IS_ROOT = os.geteuid() == 0
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


class Child:
    """Run ``fn(send)`` in a forked child; the child always leaves through ``os._exit``."""

    def __init__(self, fn: Callable[[Send], None]) -> None:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            code = 0
            try:
                os.close(read_fd)

                def send(msg: dict[str, Any]) -> None:
                    os.write(write_fd, (json.dumps(msg) + '\n').encode())

                fn(send)
            except BaseException as exc:
                code = 3
                try:
                    os.write(write_fd, (json.dumps({'error': f'{type(exc).__name__}: {exc}'}) + '\n').encode())
                except BaseException:
                    pass
            finally:
                os._exit(code)
        os.close(write_fd)
        self.pid = pid
        self.fd = read_fd
        self.buf = b''
        self.status: int | None = None

    def recv(self, timeout_s: float = 10.0) -> dict[str, Any] | None:
        """The next message, or None at EOF."""
        deadline = time.monotonic() + timeout_s
        while b'\n' not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError('timed out waiting for the child')
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    return None
                self.buf += chunk
        line, _, self.buf = self.buf.partition(b'\n')
        msg: dict[str, Any] = json.loads(line)
        assert 'error' not in msg, msg['error']
        return msg

    def wait(self, timeout_s: float = 10.0) -> int:
        """Reap the child and return its wait status."""
        deadline = time.monotonic() + timeout_s
        while self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                self.status = status
            elif time.monotonic() > deadline:
                raise AssertionError('child did not exit in time')
            else:
                time.sleep(0.005)
        return self.status

    def close(self) -> None:
        if self.status is None:
            assert self.pid > 0
            os.kill(self.pid, signal.SIGKILL)
            self.status = os.waitpid(self.pid, 0)[1]
        os.close(self.fd)

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def adopting_orphans() -> Iterator[set[int]]:
    """Be the child subreaper for the block, then kill and reap the pids the block adds to the set.

    Grandchildren re-parent to this process when their parent dies, so they get reaped here rather than
    by init; only pids that are (by then) our own children are signalled.
    """
    pids: set[int] = set()
    namespaces.set_child_subreaper(True)
    try:
        yield pids
    finally:
        namespaces.set_child_subreaper(False)
        deadline = time.monotonic() + 5.0
        for pid in sorted(pids):
            if pid <= 0:
                continue
            try:
                if int(Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[1]) == os.getpid():
                    os.kill(pid, signal.SIGKILL)
            except (OSError, IndexError, ValueError):
                pass
            while time.monotonic() < deadline:
                try:
                    if os.waitpid(pid, os.WNOHANG)[0] == pid:
                        break
                except ChildProcessError:
                    break
                time.sleep(0.005)


def run_in_child(fn: Callable[[Send], None]) -> tuple[dict[str, Any] | None, int]:
    """Run *fn* in a child; return its first message and its exit code (negative: killed by a signal)."""
    with Child(fn) as child:
        msg = child.recv()
        return msg, os.waitstatus_to_exitcode(child.wait())


def errno_of(call: Callable[[], object]) -> int:
    """0 when *call* succeeds, else the errno of the OSError it raises."""
    try:
        call()
    except OSError as exc:
        return exc.errno or -1
    return 0


def raw_syscall(nr: int, *args: int) -> int:
    """syscall(nr, ...) -> 0/result, or -errno."""
    result = int(libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) for a in args)))
    return -ctypes.get_errno() if result == -1 else result


def drop_to(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


# --- seccomp -------------------------------------------------------------------------------------

EPERM_ACTION = seccomp.SECCOMP_RET_ERRNO | errno.EPERM
ENOSYS_ACTION = seccomp.SECCOMP_RET_ERRNO | errno.ENOSYS


def run_bpf(program: bytes, nr: int, arch: int, arg0: int = 0) -> int:
    """Evaluate a classic BPF program (the subset build_filter emits) on one seccomp_data."""
    data = struct.pack('<IIQ6Q', nr & 0xFFFFFFFF, arch, 0, arg0, 0, 0, 0, 0, 0)
    insns = list(struct.iter_unpack('<HBBI', program))
    pc, acc = 0, 0
    for _ in range(len(insns)):
        code, jt, jf, k = insns[pc]
        if code == seccomp.BPF_RET_K:
            return int(k)
        if code == seccomp.BPF_LD_W_ABS:
            acc = struct.unpack_from('<I', data, k)[0]
            pc += 1
            continue
        taken = {seccomp.BPF_JEQ_K: acc == k, seccomp.BPF_JGE_K: acc >= k, seccomp.BPF_JSET_K: bool(acc & k)}[code]
        pc += 1 + (jt if taken else jf)
    raise AssertionError('program did not return')


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
    assert run_bpf(program, 0, audit_arch) == seccomp.SECCOMP_RET_ALLOW  # read / io_setup
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


def test_seccomp_install_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        seccomp.install(b'\x00' * 7)


# --- landlock ------------------------------------------------------------------------------------

LANDLOCK_ABI = landlock.abi_version()
needs_landlock = pytest.mark.skipif(LANDLOCK_ABI < 1, reason='Landlock unsupported')


def test_handled_fs_access_by_abi() -> None:
    assert landlock.handled_fs_access(0) == 0
    assert landlock.handled_fs_access(1) == (1 << 13) - 1
    assert landlock.handled_fs_access(2) & landlock.ACCESS_FS_REFER
    assert not landlock.handled_fs_access(2) & landlock.ACCESS_FS_TRUNCATE
    assert landlock.handled_fs_access(4) & landlock.ACCESS_FS_TRUNCATE
    assert not landlock.handled_fs_access(4) & landlock.ACCESS_FS_IOCTL_DEV
    assert landlock.handled_fs_access(7) == (1 << 16) - 1


@needs_landlock
def test_landlock_restricts_child(tmp_path: Path) -> None:
    ro, rw = tmp_path / 'ro', tmp_path / 'rw'
    ro.mkdir()
    rw.mkdir()
    (ro / 'data.txt').write_text('ro-data')
    single = tmp_path / 'single.txt'
    single.write_text('single')
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(('127.0.0.1', 0))
    listener.listen(4)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract_name = f'\0judge-landlock-test-{os.getpid()}'
    abstract.bind(abstract_name)
    abstract.listen(4)
    ruleset = landlock.build_ruleset(['/usr', str(ro), str(single), '/nonexistent/path'], [str(rw)])
    try:

        def body(send: Send) -> None:
            landlock.restrict_self(ruleset)
            out: dict[str, Any] = {
                'etc_hostname': errno_of(lambda: open('/etc/hostname', 'rb').close()),
                'list_usr': errno_of(lambda: os.listdir('/usr')),
                'read_ro': (ro / 'data.txt').read_text(),
                'read_single_file': single.read_text(),
                'write_ro': errno_of(lambda: (ro / 'new.txt').write_text('x')),
                'write_rw': errno_of(lambda: (rw / 'new.txt').write_text('rw-data')),
                'mkdir_rw': errno_of(lambda: (rw / 'sub').mkdir()),
                'list_root': errno_of(lambda: os.listdir('/')),
            }
            out['read_rw'] = (rw / 'new.txt').read_text()
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                out['tcp_connect'] = errno_of(lambda: s.connect(listener.getsockname()))
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                out['abstract_unix'] = errno_of(lambda: s.connect(abstract_name))
            out['signal_parent'] = errno_of(lambda: os.kill(os.getppid(), 0))
            send(out)

        msg, code = run_in_child(body)
    finally:
        os.close(ruleset)
        listener.close()
        abstract.close()
    assert code == 0
    assert msg is not None
    assert msg['etc_hostname'] == errno.EACCES
    assert msg['list_root'] == errno.EACCES
    assert msg['list_usr'] == 0
    assert msg['read_ro'] == 'ro-data'
    assert msg['read_single_file'] == 'single'
    assert msg['write_ro'] == errno.EACCES
    assert msg['write_rw'] == 0
    assert msg['mkdir_rw'] == 0
    assert msg['read_rw'] == 'rw-data'
    if LANDLOCK_ABI >= 4:
        assert msg['tcp_connect'] == errno.EACCES
    if LANDLOCK_ABI >= 6:
        assert msg['abstract_unix'] == errno.EPERM
        assert msg['signal_parent'] == errno.EPERM
    assert not (ro / 'new.txt').exists()


@needs_landlock
def test_landlock_options_off_keep_tcp_and_signals() -> None:
    ruleset = landlock.build_ruleset(['/'], [], deny_tcp=False, scope=False)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(('127.0.0.1', 0))
    listener.listen(4)
    try:

        def body(send: Send) -> None:
            landlock.restrict_self(ruleset)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                tcp = errno_of(lambda: s.connect(listener.getsockname()))
            send({'tcp': tcp, 'signal': errno_of(lambda: os.kill(os.getppid(), 0))})

        msg, code = run_in_child(body)
    finally:
        os.close(ruleset)
        listener.close()
    assert code == 0
    assert msg == {'tcp': 0, 'signal': 0}


# --- cgroups -------------------------------------------------------------------------------------

needs_cgroups = pytest.mark.skipif(not cgroups.SlotCgroup.available(), reason='needs root and memory+pids cgroups')
TEST_PARENT = 'judge-pytest'


@pytest.fixture
def slot() -> Iterator[cgroups.SlotCgroup]:
    cg = cgroups.SlotCgroup(f'slot-{os.getpid()}-{time.monotonic_ns()}', memory_mb=64, pids_max=16, parent=TEST_PARENT)
    try:
        cg.create()
        yield cg
    finally:
        cg.remove()
        _remove_test_parent(cg)


def _remove_test_parent(cg: cgroups.SlotCgroup) -> None:
    for root in cg.roots:
        try:
            os.rmdir(os.path.join(root, TEST_PARENT))
        except OSError:
            pass  # another run still uses it


def test_detect_finds_controllers() -> None:
    hierarchy = cgroups.detect()
    if hierarchy is None:
        pytest.skip('no memory+pids cgroup hierarchy')
    assert hierarchy.version in (1, 2)
    assert os.path.isfile(os.path.join(hierarchy.memory_root, 'cgroup.procs'))
    assert os.path.isfile(os.path.join(hierarchy.pids_root, 'cgroup.procs'))


def test_bad_names_rejected() -> None:
    for name in ('', '..', 'a/b', 'x y'):
        with pytest.raises((ValueError, OSError)):
            cgroups.SlotCgroup(name, memory_mb=64, pids_max=16)


def _memory_limit_bytes(cg: cgroups.SlotCgroup) -> int:
    name = 'memory.max' if cg.version == 2 else 'memory.limit_in_bytes'
    return int(Path(cg.memory_dir, name).read_text())


@needs_cgroups
def test_create_is_idempotent_and_sets_limits(slot: cgroups.SlotCgroup) -> None:
    slot.create()
    assert _memory_limit_bytes(slot) == 64 << 20
    assert Path(slot.pids_dir, 'pids.max').read_text().strip() == '16'
    memsw = Path(slot.memory_dir, 'memory.memsw.limit_in_bytes')
    for memory_mb in (32, 128):
        slot.set_memory_mb(memory_mb)
        assert _memory_limit_bytes(slot) == memory_mb << 20
        if slot.version == 1 and memsw.exists():
            assert int(memsw.read_text()) == memory_mb << 20
    assert slot.procs() == []
    assert slot.oom_kills() == 0
    slot.kill_all(timeout_s=0.1)


@needs_cgroups
def test_join_then_kill_all_empties_the_group(slot: cgroups.SlotCgroup) -> None:
    def body(send: Send) -> None:
        slot.join()
        for _ in range(3):
            if os.fork() == 0:
                time.sleep(20)
                os._exit(0)
        send({'pid': os.getpid()})
        time.sleep(20)

    with adopting_orphans() as orphans, Child(body) as child:
        msg = child.recv()
        assert msg is not None
        members = slot.procs()
        orphans.update(set(members) - {child.pid})
        assert child.pid in members and len(members) == 4
        start = time.monotonic()
        slot.kill_all(timeout_s=2.0)
        assert slot.procs() == []
        assert time.monotonic() - start < 1.0
        assert os.waitstatus_to_exitcode(child.wait()) == -signal.SIGKILL


@needs_cgroups
def test_memory_bomb_is_oom_killed(slot: cgroups.SlotCgroup) -> None:
    before = slot.oom_kills()

    def body(send: Send) -> None:
        slot.join()
        drop_to(UNPRIVILEGED_UID)
        chunks = []
        for _ in range(200 // 16):  # 200 MiB in touched 16 MiB chunks
            chunks.append(b'\x01' * (16 << 20))
        send({'allocated_mb': 16 * len(chunks)})

    msg, code = run_in_child(body)
    assert msg is None
    assert code == -signal.SIGKILL
    assert slot.oom_kills() > before
    assert slot.procs() == []


@needs_cgroups
def test_fork_bomb_is_capped_by_pids_max(slot: cgroups.SlotCgroup) -> None:
    slot.set_memory_mb(512)  # room for the children's copy-on-write pages: only pids.max may bite

    def body(send: Send) -> None:
        slot.join()
        drop_to(UNPRIVILEGED_UID)
        started, refused = 0, 0
        for _ in range(100):
            try:
                pid = os.fork()
            except BlockingIOError:
                refused += 1
                continue
            if pid == 0:
                time.sleep(20)
                os._exit(0)
            started += 1
        send({'started': started, 'refused': refused, 'uid': os.getuid()})
        time.sleep(20)

    with adopting_orphans() as orphans, Child(body) as child:
        msg = child.recv()
        assert msg is not None
        orphans.update(set(slot.procs()) - {child.pid})
        assert msg['uid'] == UNPRIVILEGED_UID
        assert msg['started'] == 15  # pids.max 16 includes the bomb itself
        assert msg['refused'] == 85
        assert len(slot.procs()) == 16
        slot.kill_all(timeout_s=2.0)
        assert slot.procs() == []
        assert os.waitstatus_to_exitcode(child.wait()) == -signal.SIGKILL


@needs_cgroups
def test_join_works_after_readonly_remount_with_cgroups_kept_writable(slot: cgroups.SlotCgroup) -> None:
    def body(send: Send) -> None:
        enter_private_mount_namespace()
        namespaces.remount_readonly_recursive('/')
        out = {'join_readonly': errno_of(slot.join)}
        namespaces.remount_readonly_recursive('/', keep_writable=slot.roots)
        out['join_kept_writable'] = errno_of(slot.join)
        out['member'] = os.getpid() in slot.procs()
        out['write_tmp'] = errno_of(lambda: open('/tmp/judge-should-be-readonly', 'x').close())
        send(out)

    msg, code = run_in_child(body)
    assert code == 0
    assert msg == {'join_readonly': errno.EROFS, 'join_kept_writable': 0, 'member': True, 'write_tmp': errno.EROFS}


@needs_cgroups
def test_remove_deletes_directories() -> None:
    cg = cgroups.SlotCgroup(f'rm-{os.getpid()}', memory_mb=32, pids_max=8, parent=TEST_PARENT)
    try:
        cg.create()
        assert all(os.path.isdir(p) for p in cg.paths)

        def body(send: Send) -> None:
            cg.join()
            send({})
            time.sleep(20)

        with Child(body) as child:
            child.recv()
            cg.remove()
            assert os.waitstatus_to_exitcode(child.wait()) == -signal.SIGKILL
        assert not any(os.path.exists(p) for p in cg.paths)
        cg.remove()  # idempotent
    finally:
        cg.remove()
        _remove_test_parent(cg)


# --- namespaces ----------------------------------------------------------------------------------

needs_root = pytest.mark.skipif(not IS_ROOT, reason='needs root')


def enter_private_mount_namespace() -> None:
    """unshare(CLONE_NEWNS) + make mounts private, refusing to continue in the host's namespace."""
    host_ns = os.readlink('/proc/self/ns/mnt')
    namespaces.unshare(namespaces.CLONE_NEWNS)
    if os.readlink('/proc/self/ns/mnt') == host_ns:
        raise RuntimeError('still in the host mount namespace')
    namespaces.make_mounts_private()


@needs_root
def test_probe_unshare() -> None:
    all_flags = (
        namespaces.CLONE_NEWNS
        | namespaces.CLONE_NEWPID
        | namespaces.CLONE_NEWNET
        | namespaces.CLONE_NEWIPC
        | namespaces.CLONE_NEWUTS
        | namespaces.CLONE_NEWCGROUP
    )
    assert namespaces.probe_unshare(namespaces.CLONE_NEWNS)
    assert namespaces.probe_unshare(all_flags)
    assert not namespaces.probe_unshare(-1)  # EINVAL

    def body(send: Send) -> None:
        drop_to(UNPRIVILEGED_UID)
        send({'unprivileged': namespaces.probe_unshare(namespaces.CLONE_NEWNS)})

    msg, code = run_in_child(body)
    assert code == 0
    assert msg == {'unprivileged': False}


def test_prctl_helpers() -> None:
    def body(send: Send) -> None:
        value = ctypes.c_int(-1)
        namespaces.set_no_new_privs()
        namespaces.set_pdeathsig(signal.SIGTERM)
        namespaces.set_child_subreaper()
        libc.prctl(2, ctypes.byref(value), 0, 0, 0)  # PR_GET_PDEATHSIG
        pdeathsig = value.value
        libc.prctl(37, ctypes.byref(value), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
        send(
            {
                'nnp': '\nNoNewPrivs:\t1' in Path('/proc/self/status').read_text(),
                'pdeathsig': pdeathsig,
                'subreaper': value.value,
            }
        )

    msg, code = run_in_child(body)
    assert code == 0
    assert msg == {'nnp': True, 'pdeathsig': signal.SIGTERM, 'subreaper': 1}


@needs_root
def test_readonly_root_with_tmpfs_and_hidden_dir(tmp_path: Path) -> None:
    mnt, secret = tmp_path / 'mnt', tmp_path / 'secret'
    mnt.mkdir()
    secret.mkdir()
    (secret / 'key').write_text('s3cret')

    def body(send: Send) -> None:
        enter_private_mount_namespace()
        namespaces.remount_readonly_recursive('/')
        namespaces.mount_tmpfs(str(mnt), 4, mode=0o700, uid=UNPRIVILEGED_UID, gid=UNPRIVILEGED_UID)
        out: dict[str, Any] = {
            'write_tmp': errno_of(lambda: (tmp_path / 'x').write_text('x')),
            'write_tmpfs': errno_of(lambda: (mnt / 'y').write_text('y')),
            'tmpfs_owner': os.stat(mnt).st_uid,
            'tmpfs_full': errno_of(lambda: (mnt / 'big').write_bytes(b'\0' * (5 << 20))),
            'hidden': namespaces.hide_path(str(secret)),
            'hide_missing': namespaces.hide_path(str(tmp_path / 'missing')),
        }
        out['secret_listing'] = os.listdir(secret)
        out['write_hidden'] = errno_of(lambda: (secret / 'z').write_text('z'))
        send(out)

    msg, code = run_in_child(body)
    assert code == 0
    assert msg == {
        'write_tmp': errno.EROFS,
        'write_tmpfs': 0,
        'tmpfs_owner': UNPRIVILEGED_UID,
        'tmpfs_full': errno.ENOSPC,
        'hidden': True,
        'hide_missing': False,
        'secret_listing': [],
        'write_hidden': errno.EROFS,
    }
    # nothing leaked into the host's mount namespace
    assert os.listdir(mnt) == []
    assert (secret / 'key').read_text() == 's3cret'
    (tmp_path / 'after').write_text('host still writable')


@needs_root
def test_readonly_fallback_is_scoped_and_recursive(tmp_path: Path) -> None:
    outer, other = tmp_path / 'outer', tmp_path / 'other'
    other.mkdir()

    def body(send: Send) -> None:
        enter_private_mount_namespace()
        namespaces.mount_tmpfs(str(outer), 4)
        namespaces.mount_tmpfs(str(outer / 'inner'), 4, noexec=True)
        namespaces._remount_fallback(str(outer))
        options = {p: o for p, o in namespaces._mount_points()}
        out = {
            'outer': errno_of(lambda: (outer / 'a').write_text('a')),
            'inner': errno_of(lambda: (outer / 'inner' / 'b').write_text('b')),
            'other': errno_of(lambda: (other / 'c').write_text('c')),
            'inner_flags': sorted({'ro', 'nosuid', 'nodev', 'noexec'} & options[str(outer / 'inner')]),
        }
        namespaces._remount_fallback(str(outer / 'inner'), readonly=False)
        out['inner_again'] = errno_of(lambda: (outer / 'inner' / 'b').write_text('b'))
        out['outer_again'] = errno_of(lambda: (outer / 'a').write_text('a'))
        send(out)

    msg, code = run_in_child(body)
    assert code == 0
    assert msg == {
        'outer': errno.EROFS,
        'inner': errno.EROFS,
        'other': 0,
        'inner_flags': sorted(['ro', 'nosuid', 'nodev', 'noexec']),
        'inner_again': 0,
        'outer_again': errno.EROFS,
    }
    assert (other / 'c').read_text() == 'c'


@needs_root
def test_mount_proc_in_new_pid_namespace() -> None:
    def body(send: Send) -> None:
        enter_private_mount_namespace()
        namespaces.unshare(namespaces.CLONE_NEWPID)
        pid = os.fork()
        if pid == 0:  # pid 1 of the new pid namespace
            code = 1
            try:
                namespaces.mount_proc('/proc')
                pids = sorted(int(n) for n in os.listdir('/proc') if n.isdigit())
                code = 0 if pids == [1] and os.getpid() == 1 else 2
            finally:
                os._exit(code)
        send({'code': os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])})

    msg, code = run_in_child(body)
    assert code == 0
    assert msg == {'code': 0}


def test_work_dir_removal_unlinks_links_and_recurses_without_following(tmp_path: Path) -> None:
    from judge.sandbox.server.cleanup import remove_tree as _remove_tree

    outside = tmp_path / 'outside'
    outside.mkdir()
    (outside / 'keep.txt').write_text('keep')
    flat, nested = tmp_path / 'w1', tmp_path / 'w2'
    for work in (flat, nested):
        work.mkdir()
        (work / 'source.py').write_text('print(1)')
        (work / 'link_to_dir').symlink_to(outside)
        (work / 'link_to_file').symlink_to(outside / 'keep.txt')
    (nested / 'sub' / 'deeper').mkdir(parents=True)
    (nested / 'sub' / 'deeper' / 'x').write_text('x')
    for work in (flat, nested):
        _remove_tree(str(work))
        assert not work.exists()
    _remove_tree(str(tmp_path / 'missing'))  # already gone: nothing to do, no error
    assert (outside / 'keep.txt').read_text() == 'keep'
