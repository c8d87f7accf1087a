"""A pool process's side of live sessions: one session job, its record, its answer.

The job (`judge.contracts.sessions.SessionJob`) came through this node's own queue.  The session host
(`judge.sandbox.sessionclient`) runs it; this module keeps Redis right (`judge.transport.sessions.store`):
every cell is recorded with its seed at the index the record expects, and a session the host does not
hold (evicted, its host restarted, or it lived on a node that died) is rebuilt first by replaying its
recorded cells, the answer saying ``restored``.  A job whose epoch is not the record's (the session
moved on) is answered ``stale`` and does nothing.  Infrastructure failures answer ``internal_error``,
never a verdict of the cell.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from judge.contracts import Verdict
from judge.contracts.sessions import SessionJob
from judge.results import build_result, internal_error
from judge.sandbox.sessionclient import SessionClient
from judge.sandbox.zygote.cell import FLAG_EXIT, FLAG_NAMES, FLAG_RAISED
from judge.transport.sessions.store import SessionRecords
from judge.transport.worker.replies import Replies
from judge.verdict import pick
from judge.worker.replay import derive_seed, static_reasons

logger = logging.getLogger('judge.worker.sessionservice')


class SessionService:
    """Runs session jobs on this node (see the module's doc)."""

    def __init__(
        self, node: str, client: SessionClient, records: SessionRecords, replies: Replies, max_chars: int, runtime: str
    ) -> None:
        self.node = node
        self.client = client
        self.records = records
        self.replies = replies
        self.max_chars = max_chars
        self.runtime = runtime or None
        self._published = 0.0

    def handle(self, job: SessionJob) -> dict[str, Any]:
        """Run ``job`` and push its answer to its reply list."""
        started = time.monotonic()
        sid = job['sid']
        try:
            answer = self._dispatch(job)
        except Exception as exc:
            logger.exception('session %s: %s failed', sid, job['op'])
            answer = {'result': self._infra(job, f'{type(exc).__name__}: {exc}', time.monotonic() - started)}
        self.replies.push(job['reply_to'], 0, answer)  # type: ignore[arg-type]
        return answer

    def _dispatch(self, job: SessionJob) -> dict[str, Any]:
        sid = job['sid']
        record = self.records.get(sid)
        if record is None:
            return {'gone': True}
        if int(record.get('epoch') or 0) != int(job['epoch']) or record.get('node') != self.node:
            return {'stale': True}
        spec = json.loads(record.get('spec') or '{}')
        if job['op'] == 'create':
            reply = self._host({'op': 'create', 'sid': sid, **spec})
            if reply.get('ok'):
                self.records.mark(sid, live='1', built='1')
            return {'ok': bool(reply.get('ok')), 'error': reply.get('error')}
        if job['op'] == 'close':
            self._host({'op': 'close', 'sid': sid})
            return {'ok': True}
        if job['op'] == 'fork':
            return self._fork(job, record, spec)
        result = self._cell(job, record, spec)
        return result if result.get('gone') else {'result': result}

    def _host(self, header: dict[str, Any], blobs: tuple[bytes, ...] = ()) -> dict[str, Any]:
        reply, out = self.client.request(header, blobs)
        figures = reply.pop('host', None)
        if isinstance(figures, dict) and time.monotonic() >= self._published + 1.0:  # at most once a second
            self._published = time.monotonic()
            self.records.publish_host(self.node, figures)
        for gone, reason in reply.pop('journal', None) or []:
            if reason == 'expired':
                self.records.forget(gone)
            else:
                self.records.mark(gone, live='0')
        if out:
            reply['_out'] = out
        return reply

    def _restore(self, sid: str, spec: dict[str, Any]) -> tuple[int, str | None]:
        """Rebuild ``sid`` here from its recorded cells; how many were replayed, or the failure."""
        recorded = self.records.cells(sid)
        cells = [c for c in recorded if not c.get('ended')]
        replay = [_replay_cell(c) for c in cells]
        reply = self._host({'op': 'create', 'sid': sid, **spec, 'replay': replay, 'count': len(recorded)})
        if not reply.get('ok'):
            return 0, str(reply.get('error') or 'the session could not be rebuilt')
        self.records.mark(sid, live='1', built='1')
        return len(cells), None

    def _cell(self, job: SessionJob, record: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
        started = time.monotonic()
        sid, cell = job['sid'], dict[str, Any](job.get('cell') or {})
        last = self.records.last(sid)
        if last is not None and last.get('call') == job['call'] and isinstance(last.get('result'), dict):
            return dict(last['result'])  # a call sent again: its first answer; the cell ran once
        index = self.records.count(sid)
        seed = derive_seed(spec.get('seed'), index)
        stdin = str(cell.get('stdin') or '').encode('utf-8', 'surrogateescape')
        time_s = min(float(cell.get('time_s') or spec.get('time_s') or 10), float(spec.get('time_s') or 10))
        code = str(cell.get('code') or '')
        header: dict[str, Any] = {
            'op': 'cell',
            'sid': sid,
            'call': job['call'],
            'index': index,
            'code': code,
            'seed': seed,
            'value': bool(cell.get('value', True)),
            'style': str(cell.get('style') or 'traceback'),
            'time_s': time_s,
        }
        restored, replayed = False, 0
        reply = self._host(header, (stdin,))
        if not reply.get('ok') and (reply.get('missing') or reply.get('host_lost')):
            if self.records.get(sid) is None:  # it expired here meanwhile (the host's journal said so)
                return {'gone': True}
            replayed, failure = self._restore(sid, spec)
            if failure is not None:
                return self._infra(job, f'the session could not be rebuilt: {failure}', time.monotonic() - started)
            restored = record.get('built') == '1'
            reply = self._host(header, (stdin,))
        if not reply.get('ok'):
            return self._infra(job, str(reply.get('error') or 'the session host failed'), time.monotonic() - started)
        reasons = static_reasons(code) | {n for bit, n in FLAG_NAMES.items() if int(reply['flags']) & bit}
        entry = {
            'code': code,
            'stdin': cell.get('stdin') or '',
            'seed': seed,
            'time_s': time_s,
            'status': reply.get('status'),
            'ended': bool(reply.get('ended')),
            'unfaithful': sorted(reasons),
            'call': job['call'],
        }
        result = self._result(job, reply, index, sorted(reasons), restored, replayed)
        entry['result'] = result
        appended = self.records.append(sid, index, entry, record, live=not reply.get('ended'))
        if appended < 0:
            logger.error('session %s: cell %d could not be recorded (%d)', sid, index, appended)
        return result

    def _result(
        self, job: SessionJob, reply: dict[str, Any], index: int, reasons: list[str], restored: bool, replayed: int
    ) -> dict[str, Any]:
        flags = int(reply.get('flags') or 0)
        status = reply.get('status')
        found: set[Verdict] = set()
        if reply.get('timed_out'):
            found.add(Verdict.TIME_LIMIT)
        if reply.get('memory_exceeded'):
            found.add(Verdict.MEMORY_LIMIT)
        if reply.get('output_exceeded'):
            found.add(Verdict.OUTPUT_LIMIT)
        if reply.get('ended') or flags & FLAG_RAISED or (flags & FLAG_EXIT and status) or (status not in (0, None)):
            found.add(Verdict.RUNTIME_ERROR)
        out, err = (list(reply.get('_out') or ()) + [b'', b''])[:2]
        stdout, stderr = out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')
        result: dict[str, Any] = dict(
            build_result(
                job['sid'],
                pick(found),
                cost_s=float(reply.get('wall_s') or 0),
                stdout=stdout[: self.max_chars],
                stderr=stderr[: self.max_chars],
                exit_code=None if reply.get('ended') and status is None else status,
                stdout_truncated=len(stdout) > self.max_chars or int(reply.get('stdout_bytes') or 0) > len(out),
                stderr_truncated=len(stderr) > self.max_chars or int(reply.get('stderr_bytes') or 0) > len(err),
                runtime=self.runtime,
            )
        )
        result.update(
            session_id=job['sid'],
            cell=index,
            value=reply.get('value'),
            restored=restored,
            replayed=replayed,
            unfaithful=reasons,
            session_ended=bool(reply.get('ended')),
            node=self.node,
        )
        return result

    def _infra(self, job: SessionJob, error: str, cost_s: float) -> dict[str, Any]:
        result: dict[str, Any] = dict(internal_error(job['sid'], error, cost_s))
        result.update(
            session_id=job['sid'],
            cell=-1,
            value=None,
            restored=False,
            replayed=0,
            unfaithful=[],
            session_ended=False,
            node=self.node,
        )
        return result

    def _fork(self, job: SessionJob, record: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
        started = time.monotonic()
        sid, children = job['sid'], list(job.get('children') or [])
        reply = self._host({'op': 'fork', 'sid': sid, 'children': children})
        if not reply.get('ok') and (reply.get('missing') or reply.get('host_lost')):
            _, failure = self._restore(sid, spec)
            if failure is not None:
                return {'ok': False, 'error': f'the session could not be rebuilt: {failure}'}
            reply = self._host({'op': 'fork', 'sid': sid, 'children': children})
        if not reply.get('ok'):
            return {'ok': False, 'error': str(reply.get('error') or 'the fork failed')}
        modes = []
        for child in reply['children']:
            mode = 'process'
            if not child['live']:
                mode = 'replay'
                _, failure = self._restore(child['sid'], spec)
                if failure is not None:
                    return {'ok': False, 'error': f'fork {child["sid"]} could not be rebuilt: {failure}'}
            modes.append({'session_id': child['sid'], 'mode': mode})
        self.records.mark_many([m['session_id'] for m in modes], node=self.node, live='1', built='1')
        return {'ok': True, 'children': modes, 'cost': time.monotonic() - started, 'fork_s': reply.get('fork_s')}


def _replay_cell(cell: dict[str, Any]) -> dict[str, Any]:
    """What the host needs to run a recorded cell again."""
    return {
        'code': cell.get('code') or '',
        'stdin': str(cell.get('stdin') or ''),
        'seed': int(cell.get('seed') or 0),
        'time_s': float(cell.get('time_s') or 10),
    }
