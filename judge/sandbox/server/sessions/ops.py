"""What the session host does for each request: create (optionally replaying recorded cells), run a
cell, fork, close, describe.  The host's process and its requests' transport are `host`'s.

Every operation on a session holds its lock: one cell at a time per session (a second request
waits, then gets ``busy``).  A cell request carries the number of cells the caller has recorded
(``index``) and a call id: a call sent again (a worker retry) gets its first answer, and a session
whose count differs from the record is dropped (``missing``), to be rebuilt from the record.
"""

from __future__ import annotations

import resource
import time
from typing import Any, Protocol

from judge.sandbox.server.sessions.cgroup import Groups
from judge.sandbox.server.sessions.forking import fork_live
from judge.sandbox.server.sessions.process import CellOutcome, Live
from judge.sandbox.server.sessions.registry import ENDED, Registry
from judge.sandbox.server.sessions.space import Spaces

BUSY_WAIT_S = 30.0
"""How long a request waits for a session another request holds."""
CREATE_NEED_BYTES = 16 << 20
"""Room made in the budget before a session is made (its own pages: what it writes, not the parent's)."""
FORK_NEED_BYTES = 4 << 20


class Spawner(Protocol):
    """Makes a new live session process (`judge.sandbox.server.sessions.host.Host.spawn`)."""

    def spawn(self, sid: str, spec: dict[str, Any]) -> Live: ...

    def discard(self, live: Live) -> None: ...


Reply = tuple[dict[str, Any], tuple[bytes, ...]]


class Ops:
    """The host's operations over its registry."""

    def __init__(self, host: Spawner, registry: Registry, spaces: Spaces, groups: Groups, scoped: bool) -> None:
        self.host = host
        self.registry = registry
        self.spaces = spaces
        self.groups = groups
        self.scoped = scoped

    def create(self, req: dict[str, Any]) -> Reply:
        """A new live session ``sid`` (``kind``, limits, TTL), after replaying ``replay`` (recorded cells; the
        record's count is ``count``, cells that ended the session included)."""
        sid = str(req['sid'])
        found = self.registry.get(sid)
        if found is not None:
            return {'ok': True, 'existing': True, 'count': found.count}, ()
        self.registry.make_room(CREATE_NEED_BYTES)
        live = self.host.spawn(sid, req)
        replay = list(req.get('replay') or [])
        for i, cell in enumerate(replay):
            out = self._run(live, {**cell, 'index': i, 'value': False}, req)
            if out.ended:
                self.host.discard(live)
                return {'ok': False, 'error': f'replaying cell {i} ended the session', 'replay_failed': i}, ()
        live.count = int(req.get('count') or live.count)  # cells that ended the session count, unreplayed
        live.memory_bytes = live.group.memory_bytes()
        self.registry.add(live)
        return {'ok': True, 'count': live.count, 'replayed': len(replay), 'kind': live.kind}, ()

    def _run(self, live: Live, cell: dict[str, Any], limits: dict[str, Any]) -> CellOutcome:
        message = {
            'op': 'cell',
            'code': str(cell.get('code', '')),
            'stdin': _bytes(cell.get('stdin')),
            'seed': int(cell.get('seed') or 0),
            'index': live.count,
            'value': bool(cell.get('value', True)),
            'style': str(cell.get('style') or 'traceback'),
        }
        time_s = float(cell.get('time_s') or limits.get('time_s') or 10.0)
        output = int(limits.get('output_bytes') or 16 << 20)
        return live.run_cell(message, time_s, output, int(limits.get('capture_bytes') or 65536))

    def _hold(self, sid: str) -> Live | Reply:
        """The locked live session ``sid``, or the reply to give when it is missing or busy."""
        live = self.registry.get(sid)
        if live is None:
            return {'ok': False, 'missing': True, 'error': f'session {sid} is not live here'}, ()
        if not live.lock.acquire(timeout=BUSY_WAIT_S):
            return {'ok': False, 'busy': True, 'error': f'session {sid} is busy'}, ()
        if self.registry.get(sid) is not live:  # evicted or closed while we waited
            live.lock.release()
            return {'ok': False, 'missing': True, 'error': f'session {sid} is not live here'}, ()
        return live

    def cell(self, req: dict[str, Any], stdin: bytes) -> Reply:
        """Run one cell in ``sid`` (see the module's doc)."""
        held = self._hold(str(req['sid']))
        if not isinstance(held, Live):
            return held
        live = held
        try:
            call = str(req.get('call') or '')
            if call and live.last is not None and live.last[0] == call:
                return live.last[1]  # type: ignore[no-any-return]
            if req.get('index') is not None and int(req['index']) != live.count:
                self.registry.pop(live.sid)
                self.host.discard(live)
                return {
                    'ok': False,
                    'missing': True,
                    'stale': True,
                    'error': 'the live session disagrees with its record',
                }, ()
            out = self._run(live, {**req, 'stdin': stdin}, req)
            reply = _cell_reply(out, live.count)
            if out.ended:
                self.registry.pop(live.sid)
                self.host.discard(live)
                self.registry.note(live.sid, ENDED)
            else:
                live.memory_bytes = live.group.memory_bytes()
            answer = (reply, (bytes(out.stdout), bytes(out.stderr)))
            live.last = (call, answer)
            return answer
        finally:
            live.lock.release()

    def fork(self, req: dict[str, Any]) -> Reply:
        """Fork ``sid`` into the ``children`` ids; which of them are live (the others: replay them)."""
        children = [str(c) for c in req['children']]
        held = self._hold(str(req['sid']))
        if not isinstance(held, Live):
            return held
        live = held
        started = time.monotonic()
        try:
            self.registry.make_room(FORK_NEED_BYTES * len(children), len(children))
            made = fork_live(live, children, self.spaces, self.groups, self.scoped)
            for child in made:
                if child is not None:
                    self.registry.add(child)
            live.used_at = time.monotonic()
        finally:
            live.lock.release()
        return {
            'ok': True,
            'count': live.count,
            'children': [{'sid': sid, 'live': child is not None} for sid, child in zip(children, made, strict=True)],
            'fork_s': time.monotonic() - started,
        }, ()

    def close(self, req: dict[str, Any]) -> Reply:
        """Kill ``sid`` and remove its files (nothing to do when it is not live here)."""
        held = self._hold(str(req['sid']))
        if not isinstance(held, Live):
            return {'ok': True, 'closed': False}, ()
        try:
            if self.registry.pop(held.sid) is held:
                self.host.discard(held)
        finally:
            held.lock.release()
        return {'ok': True, 'closed': True}, ()

    def info(self, req: dict[str, Any]) -> Reply:
        """What this host knows of ``sid``."""
        live = self.registry.get(str(req['sid']))
        if live is None:
            return {'ok': True, 'live': False}, ()
        return {
            'ok': True,
            'live': True,
            'count': live.count,
            'kind': live.kind,
            'idle_s': time.monotonic() - live.used_at,
            'memory_kb': live.group.memory_bytes() // 1024,
            'layers': live.layers,
            'pid_count': len(live.group.pids()),
            'cgroups': dict(live.group.dirs),
        }, ()


def _cell_reply(out: CellOutcome, count: int) -> dict[str, Any]:
    return {
        'ok': True,
        'status': out.status,
        'flags': out.flags,
        'value': out.value,
        'timed_out': out.timed_out,
        'output_exceeded': out.output_exceeded,
        'memory_exceeded': out.memory_exceeded,
        'pids_exceeded': out.pids_exceeded,
        'ended': out.ended,
        'wall_s': out.wall_s,
        'cpu_s': out.cpu_s,
        'max_rss_kb': out.max_rss_kb,
        'stdout_bytes': out.stdout_bytes,
        'stderr_bytes': out.stderr_bytes,
        'count': count,
    }


def _bytes(data: object) -> bytes:
    """A cell's stdin: bytes as they came, text (a recorded cell) as UTF-8."""
    if isinstance(data, str):
        return data.encode('utf-8', 'surrogateescape')
    return bytes(data) if isinstance(data, (bytes, bytearray)) else b''


def session_rlimits(file_bytes: int, nofile: int) -> list[tuple[int, int, int]]:
    """A session process's rlimits: file size, descriptors.  No CPU limit (the host's wall clock per
    cell and the cgroup's quota bound it), no process count (its uid is its family's: the pids cgroup
    bounds each session), and not the core limit, which the warm parent fixed
    (`judge.sandbox.kernel.coredump`) and the seccomp filter refuses to change."""
    return [
        (resource.RLIMIT_FSIZE, file_bytes, file_bytes),
        (resource.RLIMIT_NOFILE, nofile, nofile),
    ]
