"""One execution inside a slot: hand the plan to a pre-forked spare child, collect its bounded
output, enforce the wall clock, then kill and reap everything the execution started.

Runs inside the slot server, never inside a Celery process.  Output is read as it is produced and
only the head of each stream is kept, so a program printing gigabytes costs no memory.
"""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from judge.sandbox.fdio import write_all
from judge.sandbox.limits import Limits
from judge.sandbox.zygote.child import SETUP_FAILED_EXIT, encode_plan
from judge.sandbox.zygote.upgrade import SEEN_FLAG, UPGRADE_STATUS
from judge.sandbox.zygote.warm import DONE_RECORD

_READ_CHUNK = 65536
_EXIT_GRACE_S = 0.05


class ExecOutcome:
    """What happened to one execution (filled by the server, sent to the worker).

    A plain class, not a dataclass: see `judge.sandbox.zygote.child.ChildPrep`.
    """

    def __init__(self) -> None:
        self.exit_code: int | None = None
        self.signal: int | None = None
        self.timed_out = False
        self.output_exceeded = False
        self.memory_exceeded = False
        self.pids_exceeded = False
        self.setup_error: str | None = None
        self.wall_s = 0.0
        self.cpu_s = 0.0
        self.max_rss_kb = 0
        self.stdout_bytes = 0
        self.stderr_bytes = 0
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.exiting_pid: int | None = None
        """Set when the child reported its end but may still be exiting: the caller kills and reaps it."""
        self.upgrade = False
        """Warm Python asked to be run again in the scientific parent (`judge.sandbox.zygote.upgrade`)."""
        self.upgraded = False
        """The program ran again, from the start, in the scientific parent (this is that run's outcome)."""
        self.seen_scientific = False
        """Warm Python looked a scientific package up where it was not offered the scientific parent."""


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


class Spare(NamedTuple):
    """A forked child waiting for its plan in ``workdir`` (see `judge.sandbox.server.warm.zygotes`)."""

    pid: int
    pidfd: int
    ctrl: int
    out: int
    err: int
    status: int
    workdir: str
    reap: Callable[[int], tuple[int, float, int]]
    """Waits for the end of a pid; gives its wait status, CPU seconds and max RSS (KB)."""
    parent: int = 0
    """The pid of the zygote that forked it."""

    def alive(self) -> bool:
        """Whether the child still waits (it has not exited)."""
        ready, _, _ = select.select([self.pidfd], [], [], 0)
        return not ready

    def discard(self) -> None:
        """Retire an unused spare: closing its control pipe makes it exit."""
        for fd in (self.ctrl, self.out, self.err, self.status):
            os.close(fd)
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.reap(self.pid)
        os.close(self.pidfd)


def _decode_status(status: int, outcome: ExecOutcome) -> None:
    if os.WIFSIGNALED(status):
        outcome.signal = os.WTERMSIG(status)
        outcome.exit_code = -outcome.signal
        # RLIMIT_CPU (soft: the first whole second above the time limit) ends programs whose threads
        # burn CPU faster than the wall clock: killed by SIGXCPU, they ran out of time, not crashed.
        outcome.timed_out = outcome.timed_out or outcome.signal == signal.SIGXCPU
    else:
        outcome.exit_code = os.WEXITSTATUS(status)


class _Done:
    """The read end of the execution's done FIFO (`judge.sandbox.zygote.warm`), until it is read."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd
        self.record: tuple[int, float, int] | None = None

    def read(self) -> None:
        """Read the record (a well-formed one, or nothing), then close."""
        assert self.fd is not None
        try:
            data = os.read(self.fd, 2 * DONE_RECORD.size)
        except OSError:
            data = b''
        if len(data) == DONE_RECORD.size:  # one atomic write from warm.py, nothing else
            status, cpu_s, max_rss_kb = DONE_RECORD.unpack(data)
            self.record = (status, cpu_s, max_rss_kb)
        self.close()

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _wait(spare: Spare, message: bytes, streams: _Streams, done: _Done, deadline: float) -> bool:
    """Send the plan, then read output until the child exits or reports its end, or a limit stops it.

    Returns whether the child exited.
    """
    outcome = streams.outcome
    try:
        _send_plan(spare, message)
    except BrokenPipeError:
        return True  # the spare died before its plan: its status pipe says why
    while True:
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            outcome.timed_out = True
            return False
        watched = [spare.pidfd, *streams.fds] if done.fd is None else [spare.pidfd, done.fd, *streams.fds]
        ready, _, _ = select.select(watched, [], [], timeout)
        for fd in ready:
            if fd == done.fd:
                done.read()
            elif fd != spare.pidfd:
                streams.read(fd)
        if spare.pidfd in ready or done.record is not None or outcome.output_exceeded:
            return spare.pidfd in ready


def _send_plan(spare: Spare, message: bytes) -> None:
    write_all(spare.ctrl, message)
    os.close(spare.ctrl)


def execute(
    spare: Spare,
    plan: dict[str, Any],
    stdin: bytes,
    limits: Limits,
    kill_all: Callable[[int], None],
    done_fd: int | None = None,
) -> ExecOutcome:
    """Run ``plan`` in ``spare``; ``kill_all(pid)`` must kill every process the execution started.

    ``done_fd`` is the read end of the FIFO named by ``plan['done_path']`` (closed here).  When the
    child reports its end there, this returns before the process has finished exiting, with
    `ExecOutcome.exiting_pid` set: the caller must then kill and reap it before the slot runs
    anything else.  Otherwise everything is killed and reaped on return.
    """
    outcome = ExecOutcome()
    streams = _Streams(spare.out, spare.err, limits, outcome)
    done = _Done(done_fd)
    start = time.monotonic()
    try:
        exited = _wait(spare, encode_plan(plan, stdin), streams, done, start + limits.time_s)
        record = None if outcome.output_exceeded else done.record
        if record is not None and record[0] == UPGRADE_STATUS and not plan.get('upgrade'):
            record = None  # a request nobody offered is forged: the program is stopped (killed) where it is
        outcome.upgrade = record is not None and record[0] == UPGRADE_STATUS
        outcome.seen_scientific = record is not None and not outcome.upgrade and bool(record[0] & SEEN_FLAG)
        if record is not None and not exited and not outcome.upgrade:
            outcome.exit_code = record[0] & ~SEEN_FLAG
            outcome.cpu_s, outcome.max_rss_kb = record[1], record[2]
            outcome.exiting_pid = spare.pid  # killed and reaped by the caller, after its answer
        else:
            if not exited:
                kill_all(spare.pid)
            status, outcome.cpu_s, outcome.max_rss_kb = spare.reap(spare.pid)
            if not outcome.upgrade:
                _decode_status(status, outcome)
        outcome.wall_s = time.monotonic() - start
        # Descendants may still hold the pipes (the child closed its own ends before any report):
        # read what is there, then kill them all unless the caller will.
        streams.drain(time.monotonic() + _EXIT_GRACE_S)
        if outcome.exiting_pid is None:
            kill_all(spare.pid)
    finally:
        for fd in list(streams.fds):
            streams.close(fd)
        done.close()
        os.close(spare.pidfd)
        os.set_blocking(spare.status, False)
        try:
            setup = os.read(spare.status, 4096)
        except BlockingIOError:
            setup = b''
        os.close(spare.status)
    if setup and outcome.exit_code == SETUP_FAILED_EXIT:
        outcome.setup_error = setup.decode(errors='replace')
    return outcome


def kill_process_group(pid: int) -> None:
    """SIGKILL the execution's process group (the child called setsid, so pgid == pid)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_process(pid: int) -> None:
    """SIGKILL one process (gone already: nothing to do)."""
    try:
        os.kill(pid, signal.SIGKILL)
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
