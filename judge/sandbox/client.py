"""Worker side of a slot: starts the slot server, sends executions, restarts it when it dies.

Used by executors; knows nothing of Celery.  One `SlotClient` per worker process (slot).
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any

from judge.sandbox.limits import Limits
from judge.sandbox.protocol import ProtocolError, recv_message, send_message

logger = logging.getLogger('judge.sandbox.client')

SERVER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'server.py')
_REPLY_MARGIN_S = 10.0


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the user's program): an infrastructure error."""


@dataclass
class ExecRequest:
    """One execution: either ``argv`` (fresh process) or ``python_source`` (warm interpreter)."""

    limits: Limits
    argv: list[str] = field(default_factory=list)
    python_source: str | None = None
    python_filename: str = 'source.py'
    files: dict[str, str] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)
    exports: dict[str, str] = field(default_factory=dict)
    stdin: bytes = b''


@dataclass
class ExecResult:
    """The slot server's account of one execution."""

    exit_code: int | None
    signal: int | None
    timed_out: bool
    output_exceeded: bool
    memory_exceeded: bool
    wall_s: float
    cpu_s: float
    max_rss_kb: int
    stdout: bytes
    stderr: bytes
    stdout_bytes: int
    stderr_bytes: int


@dataclass
class SlotConfig:
    """How to start a slot server."""

    slot: int
    python: str
    tier: str = 'auto'
    allow_unsafe: bool = False
    work_root: str = '/tmp/judge-work'
    uid_base: int = 61000
    env: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        data = {k: v for k, v in self.__dict__.items() if k != 'extra'}
        data.update(self.extra)
        return json.dumps(data)


class SlotClient:
    """A connection to this slot's server; thread-safe, restarts the server on failure."""

    def __init__(self, config: SlotConfig) -> None:
        self.config = config
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self.tier: str | None = None
        self.detail: dict[str, Any] = {}

    def _start(self) -> subprocess.Popen[bytes]:
        # No preexec_fn and no user=: CPython then spawns via vfork, cheap even from a big worker.
        proc = subprocess.Popen(
            [self.config.python, '-I', SERVER_SCRIPT, self.config.to_json()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # LD_BIND_NOW: resolve every libc/libpython symbol once, in the server, instead of in each
            # forked child on its first call (about 0.3 ms of CPU per execution).  Children get their own
            # environment (`judge.sandbox.warm.prepare_interpreter`, `execve`), without it.
            env={'PATH': '/usr/bin:/bin', 'LANG': 'C.UTF-8', 'LD_BIND_NOW': '1'},
            close_fds=True,
            start_new_session=True,
        )
        assert proc.stdout is not None
        hello = self._recv(proc, 30.0)[0]
        if not hello.get('ok'):
            proc.kill()
            proc.wait()
            raise SandboxError(f'slot server refused to start: {hello.get("error")}')
        self.tier = str(hello.get('tier'))
        self.detail = dict(hello.get('detail') or {})
        logger.info('slot %d server pid %s, tier %s', self.config.slot, hello.get('pid'), self.tier)
        return proc

    @staticmethod
    def _recv(proc: subprocess.Popen[bytes], timeout_s: float) -> tuple[dict[str, Any], list[bytes]]:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], timeout_s)
        if not ready:
            raise SandboxError(f'slot server did not answer within {timeout_s:.0f}s')
        try:
            return recv_message(fd)
        except ProtocolError as e:
            raise SandboxError(f'slot server died: {e}') from e

    def ensure_started(self) -> None:
        """Start the server if it is not running (called at worker start to fail fast)."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start()

    def run(self, request: ExecRequest) -> ExecResult:
        """Execute ``request``; raises `SandboxError` on infrastructure failures only.

        If the server reports that its zygote died (it then exits), the request is run once more
        on a fresh server: the execution is sandboxed, so running it again is harmless.
        """
        reply, blobs = self._exchange(request)
        if _zygote_lost(reply):
            logger.warning('slot %d: the zygote died; restarting the slot server', self.config.slot)
            reply, blobs = self._exchange(request)
        if not reply.get('ok'):
            raise SandboxError(f'sandbox failed: {reply.get("error")}')
        return ExecResult(
            exit_code=reply['exit_code'],
            signal=reply['signal'],
            timed_out=reply['timed_out'],
            output_exceeded=reply['output_exceeded'],
            memory_exceeded=reply['memory_exceeded'],
            wall_s=reply['wall_s'],
            cpu_s=reply['cpu_s'],
            max_rss_kb=reply['max_rss_kb'],
            stdout=blobs[0] if blobs else b'',
            stderr=blobs[1] if len(blobs) > 1 else b'',
            stdout_bytes=reply['stdout_bytes'],
            stderr_bytes=reply['stderr_bytes'],
        )

    def _exchange(self, request: ExecRequest) -> tuple[dict[str, Any], list[bytes]]:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start()
            proc = self._proc
            header = {
                'op': 'exec',
                'argv': request.argv,
                'python_source': request.python_source,
                'python_filename': request.python_filename,
                'files': request.files,
                'imports': request.imports,
                'exports': request.exports,
                'limits': request.limits.to_dict(),
            }
            try:
                assert proc.stdin is not None
                send_message(proc.stdin.fileno(), header, (request.stdin,))
                reply, blobs = self._recv(proc, request.limits.time_s + _REPLY_MARGIN_S)
            except (OSError, SandboxError) as e:
                self._discard()
                raise SandboxError(str(e)) from e
            if _zygote_lost(reply):
                self._discard()  # it is exiting: do not send it the retry
            return reply, blobs

    def _discard(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        """Stop the server (its executions die with it)."""
        with self._lock:
            self._discard()


def _zygote_lost(reply: dict[str, Any]) -> bool:
    """Whether the server answered that its zygote died (it exits after such an answer)."""
    return not reply.get('ok') and str(reply.get('error', '')).startswith('ZygoteLost')
