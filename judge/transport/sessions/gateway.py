"""The gateway's session operations: create, run a cell, fork, close, describe (docs/sessions.md).

Each call finds the session's record in Redis, takes its lock (one cell at a time: a second call waits
for it, or is refused), places it (its node while that node is alive, else another live node, with a
new epoch) and sends the job through Celery to the node's queue (`judge.transport.sessions.calls`).  A
node that dies while a call waits costs the call nothing: the session is placed elsewhere and the same
call sent again; the new node rebuilds the session by replay and runs it (its answer says
``restored``).  What the infrastructure could not do is an ``internal_error`` result, never a verdict.
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from typing import Any

from celery import Celery

from judge.contracts.sessions import CellRequest, ForkRequest, SessionCreate, SessionJob
from judge.results import internal_error
from judge.sessionsettings import SessionSettings
from judge.settings import Settings
from judge.transport.sessions.calls import NodeLost, SessionCalls
from judge.transport.sessions.store import SessionStore
from judge.transport.shard import Shard

ATTEMPTS = 3
"""Placements one call tries (a node lost mid-call, a stale answer) before it answers ``internal_error``."""


class SessionError(Exception):
    """A session request refused before anything ran (an HTTP status and why)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class SessionGateway:
    """Session operations on the first broker shard (see the module's doc)."""

    def __init__(
        self, app: Celery, shard: Shard, path: str, settings: Settings, session_settings: SessionSettings
    ) -> None:
        self.shard = shard
        self.settings = settings
        self.ss = session_settings
        self.calls = SessionCalls(app, shard, path)
        self._store: SessionStore | None = None

    @property
    def store(self) -> SessionStore:
        """The Redis side (made inside the running loop)."""
        if self._store is None:
            self._store = SessionStore(self.shard.aclient)
        return self._store

    def spec(self, body: SessionCreate) -> dict[str, Any]:
        """A new session's kind, limits, TTL and seed, within the node's bounds."""
        return {
            'kind': body.kind,
            'memory_mb': min(body.memory_mb or self.settings.max_memory, self.ss.max_memory_mb),
            'time_s': min(body.time_s or self.settings.max_execution_time, self.settings.max_execution_time),
            'ttl_s': min(body.ttl_s or self.ss.ttl_s, self.ss.max_ttl_s),
            'seed': body.seed,
        }

    async def create(self, body: SessionCreate) -> dict[str, Any]:
        """A new live session on a live node."""
        sid = body.session_id or uuid.uuid4().hex
        nodes = await self.store.alive_nodes()
        if not nodes:
            raise SessionError(503, 'no live worker node for sessions')
        import random

        if not await self.store.create(sid, self.spec(body), random.choice(nodes)):
            raise SessionError(409, f'session {sid} exists')
        answer = await self._send(sid, 'create', {}, 90.0)
        if not answer.get('ok'):
            await self.store.delete(sid)
            raise SessionError(503, f'the session could not be made: {answer.get("error")}')
        return await self.info(sid)

    async def nodes(self) -> dict[str, Any]:
        """Each node's live sessions and their memory (``GET /sessions``), against the configured budget."""
        hosts = await self.store.hosts()
        return {'budget_mb': self.ss.memory_mb, 'max_sessions': self.ss.max_sessions, 'nodes': hosts}

    async def info(self, sid: str) -> dict[str, Any]:
        """What the judge knows of ``sid``."""
        record = await self.store.get(sid)
        if record is None:
            raise SessionError(404, f'no session {sid} (never made, closed, or expired)')
        spec = json.loads(record.get('spec') or '{}')
        cells = await self.store.cells(sid)
        node = record.get('node') or None
        return {
            'session_id': sid,
            'node': node,
            'node_alive': bool(node) and await self.store.alive(node or ''),
            'live': record.get('live') == '1',
            'cells': len(cells),
            'kind': spec.get('kind', 'scientific'),
            'ttl_s': float(spec.get('ttl_s') or self.ss.ttl_s),
            'idle_s': max(0.0, time.time() - float(record.get('used') or time.time())),
            'created': float(record.get('created') or 0),
            'parent': record.get('parent') or None,
            'forked_at': int(record['forked_at']) if record.get('forked_at') else None,
            'unfaithful': [{'cell': i, 'reasons': c['unfaithful']} for i, c in enumerate(cells) if c.get('unfaithful')],
        }

    async def cell(self, sid: str, body: CellRequest) -> dict[str, Any]:
        """Run one cell of ``sid`` (waiting for its lock, or refused with 409 if ``body.busy`` says so)."""
        record = await self.store.get(sid)
        if record is None:
            raise SessionError(404, f'no session {sid} (never made, closed, or expired)')
        spec = json.loads(record.get('spec') or '{}')
        time_s = min(body.time_s or float(spec.get('time_s') or 10), float(spec.get('time_s') or 10))
        wait_s = time_s + self.ss.replay_s + 15
        token = await self.store.lock(sid, wait_s + 5, wait_s if body.busy == 'wait' else 0)
        if token is None:
            raise SessionError(409, f'session {sid} is busy: another cell is running')
        try:
            cell = {
                'code': body.code,
                'stdin': body.stdin or '',
                'time_s': time_s,
                'value': body.value,
                'style': body.error_style,
            }
            answer = await self._send(sid, 'cell', {'cell': cell}, wait_s, call=body.call_id)
            await self.store.touch(sid, record)
        finally:
            await self.store.unlock(sid, token)
        result = answer.get('result')
        if isinstance(result, dict):
            return result
        if answer.get('gone'):
            raise SessionError(404, f'no session {sid} (closed or expired)')
        return _infra(sid, str(answer.get('error') or 'the session call got no answer'))

    async def fork(self, sid: str, body: ForkRequest) -> dict[str, Any]:
        """``body.n`` new sessions from ``sid``'s state."""
        started = time.monotonic()
        children = body.session_ids or [uuid.uuid4().hex for _ in range(body.n)]
        if len(children) != body.n or len(set(children)) != body.n:
            raise SessionError(422, 'session_ids must name n distinct sessions')
        record = await self.store.get(sid)
        if record is None:
            raise SessionError(404, f'no session {sid} (never made, closed, or expired)')
        wait_s = self.ss.replay_s + 30
        token = await self.store.lock(sid, wait_s + 5, wait_s)
        if token is None:
            raise SessionError(409, f'session {sid} is busy')
        try:
            count = await self.store.count(sid)
            extra = {'parent': sid, 'forked_at': str(count), 'built': '1'}
            spec = json.loads(record.get('spec') or '{}')
            if taken := await self.store.create_many(children, spec, record.get('node') or '', extra):
                raise SessionError(409, f'session {taken[0]} exists')
            await self.store.copy_cells(sid, children, record)
            answer = await self._send(sid, 'fork', {'children': children}, wait_s)
            await self.store.touch(sid, record)
        finally:
            await self.store.unlock(sid, token)
        if not answer.get('ok'):
            for child in children:
                await self.store.delete(child)
            raise SessionError(503, f'the fork failed: {answer.get("error")}')
        cost = round(time.monotonic() - started, 6)
        return {'session_id': sid, 'children': answer['children'], 'cost': cost, 'fork_s': answer.get('fork_s')}

    async def close(self, sid: str) -> dict[str, Any]:
        """Forget ``sid`` and end its process."""
        record = await self.store.get(sid)
        if record is None:
            raise SessionError(404, f'no session {sid}')
        token = await self.store.lock(sid, 15, 10)
        try:
            node = record.get('node') or ''
            if node and await self.store.alive(node):
                try:
                    await self._send(sid, 'close', {}, 10.0, record=record)
                except SessionError:
                    pass
            await self.store.delete(sid)
        finally:
            if token is not None:
                await self.store.unlock(sid, token)
        return {'session_id': sid, 'closed': True}

    async def _send(
        self,
        sid: str,
        op: str,
        extra: dict[str, Any],
        wait_s: float,
        record: dict[str, str] | None = None,
        call: str | None = None,
    ) -> dict[str, Any]:
        """Send ``op`` to the session's node, placing it again if that node is lost (see the module's doc)."""
        deadline = time.monotonic() + wait_s
        call, avoid, fresh = call or uuid.uuid4().hex, '', record is not None
        for _ in range(ATTEMPTS):
            record = record if fresh else await self.store.get(sid)
            fresh = False
            if record is None:
                return {'gone': True}
            placed = await self.store.place(sid, record, avoid)
            if placed is None:
                raise SessionError(503, 'no live worker node for sessions')
            node, epoch = placed
            job: SessionJob = {'op': op, 'sid': sid, 'epoch': epoch, 'reply_to': '', 'call': call, **extra}  # type: ignore[typeddict-item]
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                answer = await self.calls.call(job, node, left, functools.partial(self.store.alive, node))
            except NodeLost:
                avoid = node
                continue
            if answer is None:
                break
            body = answer[1] if isinstance(answer, list) else answer
            if body.get('stale'):  # the record moved on meanwhile: read it again
                continue
            return dict(body)
        return {'ok': False, 'error': f'no answer from the session node within {wait_s:.0f}s'}


def _infra(sid: str, error: str) -> dict[str, Any]:
    result: dict[str, Any] = dict(internal_error(sid, error))
    result.update(
        session_id=sid, cell=-1, value=None, restored=False, replayed=0, unfaithful=[], session_ended=False, node=None
    )
    return result
