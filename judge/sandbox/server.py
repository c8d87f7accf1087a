"""The slot server: one small long-lived process per worker slot that runs executions.

A Celery pool process is large, so forking it per submission is slow (sandbox.md §3.3).  Instead
each pool process starts one slot server with a clean environment; the server prepares the jail
once (uid, cgroups, namespaces, filters, depending on the tier) and runs one child per request.
The children are forked ahead of their request by the slot's warm parents (`judge.sandbox.parents`,
fresh interpreters renewed in the background), so the server itself never forks again.

After every execution, before anything else runs in the slot, the server kills what the execution
started, waits until every one of its processes is reaped (the slot's pids cgroup is empty),
removes what it wrote (work dir, ``/dev/shm``) and checks the result.  If the slot cannot be made
clean the server exits, and the worker starts a new one (`judge.sandbox.client`).

Run as ``python -I <this file>``; it reads its configuration as the first message on fd 0, then
speaks `judge.sandbox.protocol` on fds 0/1.  Stdlib only: no Celery, Redis or pydantic.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import sys
import time
from typing import Any

if __name__ == '__main__':  # started as a script: make the package importable, then forget it
    _root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, _root)

from judge.sandbox import namespaces
from judge.sandbox.cleanup import remove_entry, remove_tree
from judge.sandbox.errors import CleanupError, ProtocolError, SlotUnhealthy, ZygoteLost
from judge.sandbox.execute import ExecOutcome, Spare, execute, kill_process, kill_process_group, reap_orphans
from judge.sandbox.jail import Jail
from judge.sandbox.lazylog import get_logger
from judge.sandbox.limits import Limits, rlimits
from judge.sandbox.memory import slot_memory
from judge.sandbox.parents import LEAN, RENEW_EXECS, RENEW_S, SCIENTIFIC, WarmParents
from judge.sandbox.protocol import recv_message, send_message
from judge.sandbox.workdir import done_path, export_files, give_to, make_done_fifo, write_files
from judge.sandbox.zygote import Zygote, spawn_zygote

logger = get_logger('judge.sandbox.server')
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SETTLE_S = 3.0
"""How long the end of an execution may take to kill and reap all its processes before the slot is
declared broken (and the server exits to be replaced)."""


class SlotServer:
    """Serves execution requests for one slot."""

    def __init__(self, config: dict[str, Any]) -> None:
        # before the jail hides the project directory: the zygotes import the package through it
        self.package_fd = os.open(PACKAGE_ROOT, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        self.jail = Jail(config)
        self.prep = self.jail.child_prep()
        self.prep.server_pid = os.getpid()
        if os.getpid() != 1:  # outside a pid namespace: orphans of a dead zygote come back to us
            namespaces.set_child_subreaper(True)
        self.counter = 0
        self.spare: Spare | None = None
        self.spare_kind = LEAN
        """The kind of warm parent that forked `spare`."""
        self.next_kind = LEAN
        """The kind of the next spare: that of the last Python program (`refill`)."""
        self.parents = WarmParents(
            self._start_zygote,
            int(config.get('renew_execs', RENEW_EXECS)),
            float(config.get('renew_s', RENEW_S)),
            self.prep.scientific,
        )
        self._leftover: str | None = None
        """The last execution's work dir, until `finish` has removed it."""
        self._exiting: Spare | None = None
        """The last execution's child when it reported its end before exiting, until `finish`."""

    def _start_zygote(self, kind: str) -> Zygote:
        return spawn_zygote(self.prep, self.package_fd, kind)

    def _fork_spare(self, kind: str = LEAN) -> Spare:
        lineage = self.parents.lineage(kind)
        for attempt in (0, 1):
            workdir = self._workdir()
            try:
                spare = lineage.spare(workdir)
                self.spare_kind = kind
                return spare
            except ZygoteLost:  # the lineage dropped the dead zygote: the next try starts a new one
                remove_tree(workdir)
                if attempt:
                    raise
                logger.error('a %s zygote died; starting a new one', kind)
        raise AssertionError('unreachable')

    def _workdir(self) -> str:
        self.counter += 1
        path = os.path.join(self.jail.work_base, f'w{self.counter}')
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:  # cannot happen in a fresh work space; be sure anyway
            remove_entry(path)
            os.mkdir(path, 0o700)
        give_to(self.jail, path)
        return path

    def _take_spare(self, kind: str = LEAN, exact: bool = False) -> Spare:
        """The waiting spare if it suits ``kind`` (a scientific spare also serves what a lean one
        would, unless ``exact`` or ``RLIMIT_AS`` bounds memory: its address space is larger), else a
        new one of ``kind``."""
        spare, self.spare = self.spare, None
        larger = not exact and self.spare_kind == SCIENTIFIC and self.jail.cgroup is not None
        suits = self.spare_kind == kind or larger
        if spare is not None and suits and spare.alive():
            return spare
        if spare is not None:
            self._discard(spare)
        return self._fork_spare(kind)

    def _discard(self, spare: Spare) -> None:
        try:
            spare.discard()
        except ZygoteLost:
            pass
        remove_tree(spare.workdir)

    def refill(self) -> None:
        """Fork the next execution's child ahead of its request (off the critical path), from the
        parent the last Python program needed (while it is ready)."""
        if self.spare is None:
            kind = self.next_kind if self.parents.lineage(self.next_kind).ready() else LEAN
            self.spare = self._fork_spare(kind)

    def handle(self, header: dict[str, Any], blobs: list[bytes]) -> tuple[dict[str, Any], tuple[bytes, ...]]:
        """Run one request and build the reply."""
        op = header.get('op')
        if op == 'ping':
            return {'ok': True, 'tier': self.jail.tier, 'detail': self.jail.detail, 'pid': os.getpid()}, ()
        if op == 'memory':
            return {'ok': True, 'memory': slot_memory(self.parents, self.spare)}, ()
        if op != 'exec':
            return {'ok': False, 'error': f'unknown op {op!r}'}, ()
        self.finish()
        limits = self.jail.effective_limits(Limits.from_dict(header.get('limits') or {}))
        kind, exact = self.parents.choose(header.get('python_source'), header.get('parent'))
        spare = self._take_spare(kind, exact)
        used = self.spare_kind
        if header.get('python_source') is not None:
            self.next_kind = kind
        workdir = spare.workdir
        started = done = False
        try:
            files = dict(header.get('files') or {})
            source = header.get('python_source')
            filename = header.get('python_filename') or 'source.py'
            if source is not None:  # on disk too, for tracebacks' source lines
                files[filename] = source
            write_files(self.jail, workdir, files, header.get('imports') or {})
            plan = {
                'rlimits': rlimits(limits, set_nproc=self.jail.uid is not None, nproc_slack=self.jail.nproc_slack),
                'argv': list(header.get('argv') or []),
                'python_source': source,
                'python_filename': filename,
            }
            done_fd = None if source is None else make_done_fifo(self.jail, workdir, plan)
            started = True
            outcome = execute(spare, plan, blobs[0] if blobs else b'', limits, self._kill_all, done_fd)
            done = True  # execute() killed everything the execution started, or `finish` will
            self._exiting = spare if outcome.exiting_pid is not None else None
            self.jail.limits_hit(outcome)
            if outcome.exit_code == 0 and not outcome.timed_out:
                export_files(workdir, header.get('exports') or {})
        finally:
            if not started:
                self._discard(spare)
            self._leftover = workdir  # removed by `finish`, after the reply is sent
            if not done:
                self.jail.forget_counts()
                self._kill_all(0)
                self.finish()
        return _reply(outcome) | {'parent': used}, (bytes(outcome.stdout), bytes(outcome.stderr))

    def finish(self) -> None:
        """Kill, reap and remove what the last execution left, off the reply's path.

        Waits until every process of the execution is gone and reaped (so its memory and its place
        in the slot's process budget are free again) before the slot runs anything else.  Raises
        when the slot cannot be made clean.
        """
        spare, self._exiting = self._exiting, None
        workdir, self._leftover = self._leftover, None
        if spare is None and workdir is None:
            return
        if spare is not None:
            # it is exiting already, unless its report was a lie (it may even have left its process group);
            # its pid cannot be reused before the zygote has reaped it, and only by the execution's own
            kill_process_group(spare.pid)
            kill_process(spare.pid)
            try:
                spare.reap(spare.pid)  # first: the slot's cgroup is only empty once it is gone
            except ZygoteLost:  # the reply went out fine: the next spare comes from a new zygote
                self._drop_zygote(spare.parent)
        self._settle()
        if workdir is not None:
            remove_tree(workdir)
            try:
                os.unlink(done_path(workdir))
            except FileNotFoundError:  # not warm Python
                pass
        self.jail.scrub()

    def _settle(self) -> None:
        """Kill everything left in the slot and wait until every one of its processes is reaped."""
        deadline = time.monotonic() + SETTLE_S
        while True:
            tasks = self.jail.slot_tasks()
            if not tasks:
                return
            self.jail.kill_all()
            self.parents.ask_reap()  # the zygotes reap their children and adopted orphans
            reap_orphans()  # ours: orphans of a zygote that died
            if time.monotonic() >= deadline:
                raise SlotUnhealthy(f'{tasks} processes of the last execution are still in the slot')
            time.sleep(0.002)

    def _drop_zygote(self, pid: int) -> None:
        for lineage in self.parents.lineages.values():
            for zygote in lineage.zygotes():
                if zygote.pid == pid:
                    lineage.drop(zygote)
                    return

    def _kill_all(self, pid: int) -> None:
        if pid:
            kill_process_group(pid)
        self.jail.kill_all()

    def maintain(self) -> None:
        """Renew warm parents when due; a spare of a replaced parent is replaced too (off the critical path)."""
        for kind, lineage in list(self.parents.lineages.items()):
            promoted = lineage.maintain()
            spare = self.spare
            current = getattr(lineage.current, 'pid', 0)
            if promoted and spare is not None and self.spare_kind == kind and spare.parent != current:
                self.spare = None
                self._discard(spare)
                lineage.close_drained()

    def _wait_for_request(self, rfd: int) -> bool:
        """Wait for the next request, renewing warm parents meanwhile; True when one is waiting."""
        watched = [zygote.fileno() for zygote in self.parents.watched()]
        ready, _, _ = select.select([rfd, *watched], [], [], self.parents.due_in_s())
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
            if broken or not self.after_reply():  # exit: the worker starts a new slot server on its next request
                return

    def close(self) -> None:
        """Stop the warm parents (their children die with them)."""
        self.parents.close()


def _reply(outcome: ExecOutcome) -> dict[str, Any]:
    return {
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
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
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
