"""The slot server: one small long-lived process per worker slot that runs executions.

A Celery pool process is large, so forking it per submission is slow (docs/sandbox.md, "Why a slot server").  Instead
each pool process starts one slot server with a clean environment; the server prepares the jail
once (uid, cgroups, namespaces, filters, depending on the tier) and runs one child per request.
This module answers the requests; the slot's spare children and the clean-up after every execution
are `judge.sandbox.server.lifecycle`'s.  If the slot cannot be made clean the server exits, and the worker
starts a new one (`judge.sandbox.client`).

Run as ``python -I <this file>``; it reads its configuration as the first message on fd 0, then
speaks `judge.sandbox.protocol` on fds 0/1.  Stdlib only: no Celery, Redis or pydantic.
"""

from __future__ import annotations

import gc
import os
import select
import sys
from typing import Any

if __name__ == '__main__':  # started as a script: make the package importable, then forget it
    _root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    sys.path.insert(0, _root)

from judge.sandbox.errors import CleanupError, ProtocolError, SlotUnhealthy, ZygoteLost
from judge.sandbox.kernel import namespaces
from judge.sandbox.lazylog import get_logger
from judge.sandbox.limits import Limits, rlimits
from judge.sandbox.protocol import recv_message, send_message
from judge.sandbox.server.execute import ExecOutcome, execute
from judge.sandbox.server.files.workdir import export_files, fetch_files, make_done_fifo, write_files
from judge.sandbox.server.lifecycle import SlotLife
from judge.sandbox.server.memory import slot_memory
from judge.sandbox.server.warm.parents import SCIENTIFIC
from judge.sandbox.server.warm.prefixes import Prefixes
from judge.sandbox.zygote.upgrade import OFFER

logger = get_logger('judge.sandbox.server.main')


class SlotServer(SlotLife):
    """Serves execution requests for one slot (its life between them: `SlotLife`)."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.prefixes = Prefixes()

    def handle(self, header: dict[str, Any], blobs: list[bytes]) -> tuple[dict[str, Any], tuple[bytes, ...]]:
        """Run one request and build the reply."""
        op = header.get('op')
        if op == 'ping':
            return {'ok': True, 'tier': self.jail.tier, 'detail': self.jail.detail, 'pid': os.getpid()}, ()
        if op == 'memory':
            return {'ok': True, 'memory': slot_memory(self.parents, self.spare)}, ()
        if op == 'phases':
            return {'ok': True, 'phases': self.phases.take()}, ()
        if op != 'exec':
            return {'ok': False, 'error': f'unknown op {op!r}'}, ()
        self.phases.executed()
        self.finish()
        limits = self.jail.effective_limits(Limits.from_dict(header['limits']))
        source, asked = header.get('python_source'), header.get('parent')
        kind, exact = self.parents.choose(source, asked)
        upgrade = 0
        if source is not None and asked is None and kind != SCIENTIFIC:
            kind, upgrade = self.parents.hidden_imports(source, kind)
        self.phases.lap('choose')
        outcome, used, fetched = self._attempt(header, blobs, limits, kind, exact, upgrade)
        if upgrade == OFFER and source is not None:
            self.parents.shapes.learn(source, outcome.upgrade)
        if outcome.upgrade:  # nothing of the first attempt is kept but the time it took
            first_s = outcome.wall_s
            self.finish()
            again = limits._replace(time_s=max(0.001, limits.time_s - first_s))
            outcome, used, fetched = self._attempt(header, blobs, again, SCIENTIFIC, True, 0)
            outcome.wall_s += first_s
            outcome.upgraded = True
        elif outcome.seen_scientific:  # a hidden import, run cold: warm the scientific parent for the next
            self.parents.lineage(SCIENTIFIC).start_background()
        reply = _reply(outcome) | {'parent': used, 'fetched': list(fetched)}
        self.phases.lap('reply')
        return reply, (bytes(outcome.stdout), bytes(outcome.stderr), *fetched.values())

    def _attempt(
        self, header: dict[str, Any], blobs: list[bytes], limits: Limits, kind: str, exact: bool, upgrade: int
    ) -> tuple[ExecOutcome, str, dict[str, bytes]]:
        """Run the request once in a spare of ``kind``: the outcome, the kind of parent that served it, and the
        files of ``fetch`` it left."""
        spare = self._take_spare(kind, exact)
        self.phases.lap('spare')
        used = self.spare_kind
        source = header.get('python_source')
        if source is not None:
            self.note_program(kind)
        workdir = spare.workdir
        started = done = False
        try:
            files = dict(header.get('files') or {})
            filename = header.get('python_filename') or 'source.py'
            if source is not None:  # on disk too, for tracebacks' source lines
                files[filename] = source
            write_files(self.jail, workdir, files, header.get('imports') or {})
            plan = {
                'rlimits': rlimits(limits, set_nproc=self.jail.uid is not None, nproc_slack=self.jail.nproc_slack),
                'argv': list(header.get('argv') or []),
                'python_source': source,
                'python_filename': filename,
                'upgrade': upgrade,
                'prefix': None if source is None else self.prefixes.find(source),
            }
            done_fd = None if source is None else make_done_fifo(self.jail, workdir, plan)
            started = True
            self.phases.lap('files')
            outcome = execute(spare, plan, blobs[0] if blobs else b'', limits, self._kill_all, done_fd)
            self.phases.lap('execute')
            done = True  # execute() killed everything the execution started, or `finish` will
            self._exiting = spare if outcome.exiting_pid is not None else None
            self.jail.limits_hit(outcome)
            if outcome.exit_code == 0 and not outcome.timed_out:
                export_files(workdir, header.get('exports') or {})
            fetched = fetch_files(workdir, list(header.get('fetch') or []), limits.output_bytes)
        finally:
            if not started:
                self._discard(spare)
            self._leftover = workdir  # removed by `finish`, after the reply is sent
            if not done:
                self.jail.forget_counts()
                self._kill_all(0)
                self.finish()
        return outcome, used, fetched

    def _wait_for_request(self, rfd: int) -> bool:
        """Wait for the next request, renewing warm parents meanwhile; True when one is waiting."""
        watched = [zygote.fileno() for zygote in self.parents.watched()]
        ready, _, _ = select.select([rfd, *watched], [], [], self.parents.due_in_s())
        self.phases.lap('wait')
        if rfd in ready:
            return True
        self.maintain()
        self.refill()
        return False

    def after_reply(self) -> bool:
        """Clean the slot, renew parents when due, fork the next spare; False if the slot is broken."""
        try:
            self.finish()
        except Exception:
            logger.exception('the slot could not be cleaned after an execution; the slot server exits')
            return False
        try:
            self.maintain()
            self.refill()
        except ZygoteLost:
            logger.exception('no zygote; will start one on the next request')
        except OSError:
            logger.exception('could not fork a spare child; will retry on the next request')
        return True

    def serve(self, rfd: int, wfd: int) -> None:
        """Answer requests until the channel closes or the slot breaks."""
        send_message(wfd, {'ok': True, 'tier': self.jail.tier, 'detail': self.jail.detail, 'pid': os.getpid()})
        while True:
            try:
                if not self._wait_for_request(rfd):
                    continue
                header, blobs = recv_message(rfd)
                self.phases.lap('receive')
            except ProtocolError:
                self.finish()
                return
            except (OSError, ZygoteLost):
                logger.exception('renewing the warm parents failed')
                continue
            broken = False
            try:
                reply, out = self.handle(header, blobs)
            except Exception as exc:
                logger.exception('request failed')
                broken = isinstance(exc, (SlotUnhealthy, CleanupError))  # the slot cannot be made clean
                retry = broken or isinstance(exc, ZygoteLost)  # the slot's failure, not the request's
                reply, out = {'ok': False, 'error': f'{type(exc).__name__}: {exc}', 'retry': retry}, ()
            send_message(wfd, reply, out)
            self.phases.lap('send')
            if broken or not self.after_reply():  # exit: the worker starts a new slot server on its next request
                return


def _reply(outcome: ExecOutcome) -> dict[str, Any]:
    return {
        'upgraded': outcome.upgraded,
        'ok': outcome.setup_error is None,
        'error': outcome.setup_error,
        'retry': outcome.setup_error is not None,  # the child failed before the program ran
        'exit_code': outcome.exit_code,
        'signal': outcome.signal,
        'timed_out': outcome.timed_out,
        'output_exceeded': outcome.output_exceeded,
        'memory_exceeded': outcome.memory_exceeded,
        'pids_exceeded': outcome.pids_exceeded,
        'wall_s': outcome.wall_s,
        'cpu_s': outcome.cpu_s,
        'max_rss_kb': outcome.max_rss_kb,
        'stdout_bytes': outcome.stdout_bytes,
        'stderr_bytes': outcome.stderr_bytes,
    }


def main() -> int:
    """Entry point: the configuration, then requests on fd 0; replies on fd 1."""
    namespaces.default_signals()
    rfd, wfd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    try:
        config, _ = recv_message(rfd)
        server = SlotServer(config)
    except Exception as exc:
        send_message(wfd, {'ok': False, 'error': f'{type(exc).__name__}: {exc}'})
        return 1
    gc.collect()
    gc.freeze()
    try:
        server.refill()
    except Exception as exc:
        send_message(wfd, {'ok': False, 'error': f'{type(exc).__name__}: {exc}'})
        server.close()
        return 1
    server.serve(rfd, wfd)
    server.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
