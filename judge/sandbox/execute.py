"""One execution inside a slot: fork the child, feed stdin, collect bounded output, enforce the
wall clock, then kill and reap everything the execution started.

Runs inside the slot server, never inside a Celery process.  Output is read as it is produced and
only the head of each stream is kept, so a program printing gigabytes costs no memory.
"""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from judge.sandbox.child import SETUP_FAILED_EXIT, ChildPlan, run_child
from judge.sandbox.limits import Limits

_READ_CHUNK = 65536
_EXIT_GRACE_S = 0.05


@dataclass
class ExecOutcome:
    """What happened to one execution (filled by the server, sent to the worker)."""

    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    output_exceeded: bool = False
    memory_exceeded: bool = False
    setup_error: str | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    max_rss_kb: int = 0
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)


class _Streams:
    """Non-blocking readers of the child's stdout and stderr pipes with a shared output budget."""

    def __init__(self, out_fd: int, err_fd: int, limits: Limits, outcome: ExecOutcome) -> None:
        self.fds = {out_fd: 'stdout', err_fd: 'stderr'}
        self.limits = limits
        self.outcome = outcome
        for fd in self.fds:
            os.set_blocking(fd, False)

    def read(self, fd: int) -> None:
        try:
            data = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            return
        if not data:
            self.close(fd)
            return
        out = self.outcome
        name = self.fds[fd]
        head = out.stdout if name == 'stdout' else out.stderr
        room = self.limits.capture_bytes - len(head)
        if room > 0:
            head += data[:room]
        if name == 'stdout':
            out.stdout_bytes += len(data)
        else:
            out.stderr_bytes += len(data)
        if out.stdout_bytes + out.stderr_bytes > self.limits.output_bytes:
            out.output_exceeded = True

    def close(self, fd: int) -> None:
        if fd in self.fds:
            del self.fds[fd]
            os.close(fd)

    def drain(self, deadline: float) -> None:
        """Read until both pipes hit EOF or ``deadline`` passes."""
        while self.fds and time.monotonic() < deadline:
            ready, _, _ = select.select(list(self.fds), [], [], max(0.0, deadline - time.monotonic()))
            for fd in ready:
                self.read(fd)
        for fd in list(self.fds):
            self.close(fd)


def _stdin_fd(data: bytes) -> int:
    fd = os.memfd_create('stdin', os.MFD_CLOEXEC)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _decode_status(status: int, outcome: ExecOutcome) -> None:
    if os.WIFSIGNALED(status):
        outcome.signal = os.WTERMSIG(status)
        outcome.exit_code = -outcome.signal
    else:
        outcome.exit_code = os.WEXITSTATUS(status)


def execute(
    plan: ChildPlan,
    stdin: bytes,
    kill_all: Callable[[int], None],
) -> ExecOutcome:
    """Run ``plan`` in a forked child; ``kill_all(pid)`` must kill every process it started."""
    outcome = ExecOutcome()
    limits = plan.limits
    stdin_fd = _stdin_fd(stdin)
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    status_r, status_w = os.pipe2(os.O_CLOEXEC)
    plan.stdin_fd, plan.stdout_fd, plan.stderr_fd, plan.status_fd = stdin_fd, out_w, err_w, status_w
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(out_r)
        os.close(err_r)
        os.close(status_r)
        run_child(plan)
    for fd in (stdin_fd, out_w, err_w, status_w):
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    streams = _Streams(out_r, err_r, limits, outcome)
    deadline = start + limits.time_s
    exited = False
    try:
        while True:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                outcome.timed_out = True
                break
            ready, _, _ = select.select([pidfd, *streams.fds], [], [], timeout)
            for fd in ready:
                if fd == pidfd:
                    exited = True
                else:
                    streams.read(fd)
            if outcome.output_exceeded or exited:
                break
        if not exited:
            kill_all(pid)
        _, status, rusage = os.wait4(pid, 0)
        outcome.wall_s = time.monotonic() - start
        _decode_status(status, outcome)
        outcome.cpu_s = rusage.ru_utime + rusage.ru_stime
        outcome.max_rss_kb = rusage.ru_maxrss
        # Descendants may still hold the pipes: read what is there, then kill them all.
        streams.drain(time.monotonic() + _EXIT_GRACE_S)
        kill_all(pid)
    finally:
        for fd in list(streams.fds):
            streams.close(fd)
        os.close(pidfd)
        setup = os.read(status_r, 4096)
        os.close(status_r)
    if setup and outcome.exit_code == SETUP_FAILED_EXIT:
        outcome.setup_error = setup.decode(errors='replace')
    return outcome


def kill_process_group(pid: int) -> None:
    """SIGKILL the execution's process group (the child called setsid, so pgid == pid)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def reap_orphans() -> None:
    """Reap any zombie the slot server adopted as child subreaper."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
