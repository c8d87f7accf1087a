"""The host's handle on one live session process, and one cell run in it.

`Live` holds the session's control socket, output pipes, cgroups and place (family, container).  A
cell (`Live.run_cell`): thaw the session, send the cell, read its output as it comes (only the head of
each stream is kept; past the output limit the cell is stopped), wait for its ``D`` record
(`judge.sandbox.zygote.cell`) or the wall-clock limit, freeze again.  A cell over its limit is first
interrupted (SIGINT: ``KeyboardInterrupt``, the session lives on, as in Jupyter); if it does not end
within `GRACE_S` the session is killed (`CellOutcome.ended`), as it is when the OOM killer or the
program itself ends it.  Everything the process sends is parsed as untrusted bytes.
"""

from __future__ import annotations

import marshal
import os
import select
import signal
import socket
import threading
import time
from typing import Any

from judge.sandbox.server.sessions.cgroup import Group
from judge.sandbox.server.sessions.space import Family
from judge.sandbox.zygote.cell import DONE

GRACE_S = 2.0
"""How long an interrupted cell may take to end before its session is killed."""
_CHUNK = 65536
LAYERS_MAX = 16
"""Landlock's nesting limit (``LANDLOCK_MAX_NUM_LAYERS``): a fork needs one more layer for each side."""


class CellOutcome:
    """What one cell did (a plain class, like `judge.sandbox.server.execute.ExecOutcome`)."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.flags = 0
        self.value: str | None = None
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.stdout_bytes = 0
        self.stderr_bytes = 0
        self.wall_s = 0.0
        self.cpu_s = 0.0
        self.max_rss_kb = 0
        self.timed_out = False
        self.output_exceeded = False
        self.memory_exceeded = False
        self.pids_exceeded = False
        self.ended = False
        """The session's process is gone (killed, out of memory, or the cell ended it)."""


class Live:
    """One live session process (see the module's doc)."""

    def __init__(
        self, sid: str, pid: int, fds: list[int], group: Group, family: Family, container: str, workdir: str
    ) -> None:
        ctrl, out, err = fds
        self.sid = sid
        self.pid = pid
        self.pidfd = os.pidfd_open(pid)
        self.sock = socket.socket(fileno=ctrl)
        self.out, self.err = out, err
        for fd in (out, err):
            os.set_blocking(fd, False)
        self.group = group
        self.family = family
        self.container = container
        self.workdir = workdir
        self.lock = threading.Lock()
        self.count = 0
        """Cells run in this process so far (replayed ones included)."""
        self.last: tuple[str, Any] | None = None
        """The last cell's call id and reply, for a call that is sent again."""
        self.used_at = time.monotonic()
        self.ttl_s = 600.0
        self.layers = 2
        """Landlock layers the process runs under (the warm parent's and its own)."""
        self.kind = 'lean'
        self.forks: list[int] = []
        self.memory_bytes = 0

    def alive(self) -> bool:
        """Whether the process still runs."""
        return not ready([self.pidfd], 0)

    def send(self, message: dict[str, Any], fds: list[int] | tuple[int, ...] = ()) -> None:
        """Send one message (marshal: the process trusts the host) with descriptors."""
        if fds:
            socket.send_fds(self.sock, [marshal.dumps(message)], list(fds))
        else:
            self.sock.send(marshal.dumps(message))

    def recv(self, timeout_s: float) -> bytes:
        """The process's next message; b'' when it died or said nothing in time."""
        if self.sock.fileno() in ready([self.sock.fileno(), self.pidfd], timeout_s):
            try:
                return self.sock.recv(1 << 20)
            except OSError:
                return b''
        return b''

    def freeze(self, frozen: bool = True) -> None:
        """Freeze (or thaw) the whole session."""
        self.group.freeze(frozen)

    def run_cell(self, message: dict[str, Any], time_s: float, output_bytes: int, capture_bytes: int) -> CellOutcome:
        """Run one cell (see the module's doc); the session is frozen again on return unless it ended."""
        out = CellOutcome()
        oom, refused, cpu = (
            self.group.counter('memory', _oom_file(self.group), 'oom_kill'),
            self.group.counter('pids', 'pids.events', 'max'),
            self.group.cpu_s(),
        )
        self.freeze(False)
        start = time.monotonic()
        try:
            self.send(message)
            record = self._wait(out, start + time_s, output_bytes, capture_bytes)
            if record is None and self.alive() and not out.ended:
                out.timed_out = not out.output_exceeded
                os.kill(self.pid, signal.SIGINT)
                record = self._wait(out, time.monotonic() + GRACE_S, output_bytes * 2, capture_bytes)
        except OSError:
            record = None
        out.wall_s = time.monotonic() - start
        self._drain(out, capture_bytes)
        if record is not None and len(record) >= 1 + DONE.size:
            out.status, out.flags, _, out.max_rss_kb = DONE.unpack(record[1 : 1 + DONE.size])
            rest = record[1 + DONE.size :]
            out.value = rest[1:].decode('utf-8', 'replace') if rest[:1] == b'=' else None
        else:
            out.ended = True
            self.group.kill()
        out.cpu_s = max(0.0, self.group.cpu_s() - cpu)
        out.memory_exceeded = self.group.counter('memory', _oom_file(self.group), 'oom_kill') > oom
        out.pids_exceeded = self.group.counter('pids', 'pids.events', 'max') > refused
        if not out.ended:
            self.freeze()
        self.count += 1
        self.used_at = time.monotonic()
        return out

    def _wait(self, out: CellOutcome, deadline: float, output_bytes: int, capture_bytes: int) -> bytes | None:
        """Read output until the ``D`` record (returned), the deadline or the output limit (None)."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            got = ready([self.sock.fileno(), self.pidfd, self.out, self.err], left)
            for fd in (self.out, self.err):
                if fd in got:
                    self._read(fd, out, capture_bytes)
            if out.stdout_bytes + out.stderr_bytes > output_bytes and not out.output_exceeded:
                out.output_exceeded = True
                return None
            if self.sock.fileno() in got:
                data = self.sock.recv(1 << 20)
                if data[:1] == b'D':
                    return data
                if not data:
                    out.ended = True
                    return None
            elif self.pidfd in got:
                out.ended = True
                return None

    def _read(self, fd: int, out: CellOutcome, capture_bytes: int) -> None:
        try:
            data = os.read(fd, _CHUNK)
        except (BlockingIOError, OSError):
            return
        head = out.stdout if fd == self.out else out.stderr
        room = capture_bytes - len(head)
        if room > 0:
            head += data[:room]
        if fd == self.out:
            out.stdout_bytes += len(data)
        else:
            out.stderr_bytes += len(data)

    def _drain(self, out: CellOutcome, capture_bytes: int) -> None:
        """What the cell wrote just before its end (the process flushed before answering)."""
        for fd in (self.out, self.err):
            for _ in range(64):
                before = out.stdout_bytes + out.stderr_bytes
                self._read(fd, out, capture_bytes)
                if out.stdout_bytes + out.stderr_bytes == before:
                    break

    def close(self) -> None:
        """Kill the session's processes and release the host's descriptors (the cgroup stays: `kill`)."""
        self.group.kill()
        for fd in (self.out, self.err, self.pidfd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.sock.close()


def ready(fds: list[int], timeout_s: float) -> set[int]:
    """Which of ``fds`` are readable (or hung up) within ``timeout_s`` (poll: any descriptor number)."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return {fd for fd, _ in poller.poll(max(0, int(timeout_s * 1000 + 0.999)))}


def _oom_file(group: Group) -> str:
    return 'memory.events' if group.version == 2 else 'memory.oom_control'
