"""Worker side of a slot: starts the slot server, sends executions, restarts it when it dies.

Used by executors; knows nothing of Celery.  One `SlotClient` per worker process (slot).

The slot heals itself: a server that died, hung, or could not clean its slot after an execution
(it then exits) is replaced by a fresh one on the next request, and a request caught by such a
failure is sent again to the fresh server, up to `SlotClient.retries` times, before it is reported
as an infrastructure error (`SandboxError`).  Running an execution again is harmless: it is
sandboxed and its outputs are only what the reply says.
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

from judge.sandbox.errors import ProtocolError
from judge.sandbox.errors import SandboxError as SandboxError  # re-exported: callers import it from here
from judge.sandbox.errors import SlotLost as SlotLost
from judge.sandbox.limits import Limits
from judge.sandbox.protocol import recv_message, send_message

logger = logging.getLogger('judge.sandbox.client')

SERVER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'server', 'main.py')
_REPLY_MARGIN_S = 10.0
RETRIES = 2
"""How many times a request caught by a slot failure is sent again, to a fresh server."""
_START_TIMEOUT_S = 60.0


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
    fetch: list[str] = field(default_factory=list)
    """Relative paths of files to read back from the work dir after the run (`ExecResult.fetched`)."""
    parent: str | None = None
    """Warm Python only: the warm parent to fork from, ``'lean'``, ``'scientific'`` or ``'bare'`` (for tests that
    run a program through each); None (the default): the slot server chooses by the program's imports."""


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
    pids_exceeded: bool = False
    """The slot's pids limit refused the execution a process or thread (cgroup tiers only)."""
    parent: str = ''
    """The kind of warm parent that forked the execution's process (``lean`` or ``scientific``)."""
    upgraded: bool = False
    """Warm Python that started elsewhere and ran again, from the start, in the scientific parent
    (`judge.sandbox.zygote.upgrade`); the figures are of both attempts' time together."""
    fetched: dict[str, bytes] = field(default_factory=dict)
    """The files of `ExecRequest.fetch` that were there after the run (regular files, within the output limit)."""


@dataclass
class SlotConfig:
    """How to start a slot server."""

    slot: int
    python: str
    memory_mb: int
    """The slot's memory cgroup limit, MiB, until an execution sets its own (`Limits.memory_mb`)."""
    pids: int
    """The slot's pids cgroup bound: processes and threads of one execution."""
    tier: str = 'auto'
    allow_unsafe: bool = False
    work_root: str = '/tmp/judge-work'
    uid_base: int = 61000
    env: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_message(self) -> dict[str, Any]:
        """The configuration as the server reads it (its first message, never its command line)."""
        data = {k: v for k, v in self.__dict__.items() if k != 'extra'}
        data.update(self.extra)
        checked: dict[str, Any] = json.loads(json.dumps(data))  # JSON-able, as the server will read it
        return checked


class SlotClient:
    """A connection to this slot's server; thread-safe, restarts the server on failure."""

    def __init__(self, config: SlotConfig, retries: int = RETRIES) -> None:
        self.config = config
        self.retries = retries
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self.tier: str | None = None
        self.detail: dict[str, Any] = {}
        self.starts = 0
        """Slot servers started so far (more than one: the slot was restarted)."""

    @property
    def restarts(self) -> int:
        """How many times the slot server was replaced."""
        return max(0, self.starts - 1)

    @property
    def server_pid(self) -> int | None:
        """The running slot server's pid (the outer one of the namespaces tier), if any."""
        return self._proc.pid if self._proc is not None else None

    def _start(self) -> subprocess.Popen[bytes]:
        # No preexec_fn and no user=: CPython then spawns via vfork, cheap even from a big worker.
        proc = subprocess.Popen(
            [self.config.python, '-I', SERVER_SCRIPT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={'PATH': '/usr/bin:/bin', 'LANG': 'C.UTF-8'},
            close_fds=True,
            start_new_session=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            send_message(proc.stdin.fileno(), self.config.to_message())
            hello = self._recv(proc, _START_TIMEOUT_S)[0]
        except (OSError, SandboxError) as e:
            _stop(proc)
            raise SandboxError(f'slot server failed to start: {e}') from e
        if not hello.get('ok'):
            _stop(proc)
            raise SandboxError(f'slot server refused to start: {hello.get("error")}')
        self.tier = str(hello.get('tier'))
        self.detail = dict(hello.get('detail') or {})
        self.starts += 1
        log = logger.warning if self.starts > 1 else logger.info
        log('slot %d server pid %s (start #%d), tier %s', self.config.slot, proc.pid, self.starts, self.tier)
        return proc

    @staticmethod
    def _recv(proc: subprocess.Popen[bytes], timeout_s: float) -> tuple[dict[str, Any], list[bytes]]:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], timeout_s)
        if not ready:
            raise SlotLost(f'slot server did not answer within {timeout_s:.0f}s')
        try:
            return recv_message(fd)
        except ProtocolError as e:
            raise SlotLost(f'slot server died: {e}') from e

    def ensure_started(self) -> None:
        """Start the server if it is not running (called at worker start to fail fast)."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start()

    def run(self, request: ExecRequest) -> ExecResult:
        """Execute ``request``; raises `SandboxError` on infrastructure failures only.

        A request caught by a failure of the slot (its server died, hung, or broke) is sent again to
        a fresh server, at most `retries` times.
        """
        attempts = 1 + max(0, self.retries)
        for attempt in range(1, attempts + 1):
            try:
                reply, blobs = self._exchange(request)
            except SlotLost as e:
                if attempt == attempts:
                    raise SandboxError(f'{e} (slot {self.config.slot}, {attempts} attempts)') from e
                logger.warning('slot %d: %s; retrying on a fresh slot server', self.config.slot, e)
                continue
            if reply.get('ok') or not _retryable(reply) or attempt == attempts:
                break
            logger.warning('slot %d: %s; retrying', self.config.slot, reply.get('error'))
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
            pids_exceeded=bool(reply.get('pids_exceeded')),
            parent=str(reply.get('parent') or ''),
            upgraded=bool(reply.get('upgraded')),
            fetched=dict(zip(reply.get('fetched') or [], blobs[2:], strict=False)),
        )

    def memory(self) -> dict[str, Any]:
        """The slot's memory (`judge.sandbox.server.memory.slot_memory`); empty when the server cannot say."""
        return self._ask('memory')

    def phase_costs(self) -> dict[str, Any]:
        """The slot server's CPU per phase since the last call (`judge.sandbox.server.phases`; needs
        ``phase_costs`` in the configuration's extra); empty when the server cannot say."""
        return self._ask('phases')

    def _ask(self, op: str) -> dict[str, Any]:
        """A running server's answer to a request without an execution: its reply's ``op`` entry."""
        with self._lock:
            proc = self._proc
            if proc is None or proc.poll() is not None or proc.stdin is None:
                return {}
            try:
                send_message(proc.stdin.fileno(), {'op': op})
                reply = self._recv(proc, _REPLY_MARGIN_S)[0]
            except (OSError, SlotLost):
                self._discard()
                return {}
        answer = reply.get(op)
        return dict(answer) if isinstance(answer, dict) else {}

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
            if request.parent is not None:
                header['parent'] = request.parent
            if request.fetch:
                header['fetch'] = request.fetch
            try:
                assert proc.stdin is not None
                send_message(proc.stdin.fileno(), header, (request.stdin,))
                return self._recv(proc, request.limits.time_s + _REPLY_MARGIN_S)
            except (OSError, SlotLost) as e:
                self._discard()
                raise SlotLost(str(e) or type(e).__name__) from e

    def _discard(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            _stop(proc)

    def close(self) -> None:
        """Stop the server (its executions die with it)."""
        with self._lock:
            self._discard()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()


def _retryable(reply: dict[str, Any]) -> bool:
    """Whether a failed reply is the slot's failure (worth another try), not the request's."""
    return bool(reply.get('retry'))
