"""Forked children for the kernel-primitive tests: every restriction is applied in a child that reports back
as JSON lines over a pipe, so the test process itself is never restricted.

Mount helpers run only after the child has entered a new mount namespace (`enter_private_mount_namespace`
checks it), and fork/memory bombs run only inside a slot cgroup with pids/memory limits, as a non-root uid
(`drop_to`).  No test ever calls kill(-1)."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from judge.sandbox.kernel import namespaces

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


def enter_private_mount_namespace() -> None:
    """unshare(CLONE_NEWNS) + make mounts private, refusing to continue in the host's namespace."""
    host_ns = os.readlink('/proc/self/ns/mnt')
    namespaces.unshare(namespaces.CLONE_NEWNS)
    if os.readlink('/proc/self/ns/mnt') == host_ns:
        raise RuntimeError('still in the host mount namespace')
    namespaces.make_mounts_private()
