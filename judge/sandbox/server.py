"""The slot server: one small long-lived process per worker slot that runs executions.

A Celery pool process is large, so forking it per submission is slow (sandbox.md §3.3).  Instead
each pool process starts one slot server with a clean environment; the server prepares the jail
once (uid, cgroups, namespaces, filters, depending on the tier) and runs one child per request.
The children are forked ahead of their request by the slot's zygote (`judge.sandbox.zygote`), a
copy of the server taken once after start-up, so the server itself never forks again.

Run as ``python -I <this file> <config-json>``; it speaks `judge.sandbox.protocol` on fds 0/1.
Stdlib only: this module must not import Celery, Redis or pydantic.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import sys
from typing import Any

if __name__ == '__main__':  # started as a script: make the package importable, then forget it
    _root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, _root)

from judge.sandbox.execute import ExecOutcome, Spare, execute, kill_process_group, reap_orphans
from judge.sandbox.jail import Jail
from judge.sandbox.lazylog import get_logger
from judge.sandbox.limits import Limits, rlimits
from judge.sandbox.protocol import ProtocolError, recv_message, send_message, write_all
from judge.sandbox.zygote import Zygote, ZygoteLost, start_zygote

logger = get_logger('judge.sandbox.server')
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC


class SlotServer:
    """Serves execution requests for one slot."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.jail = Jail(config)
        self.prep = self.jail.child_prep()
        self.counter = 0
        self.spare: Spare | None = None
        self.zygote: Zygote | None = None
        self._leftover: str | None = None
        """The last execution's work dir, until `finish` has removed it."""
        self._exiting: int | None = None
        """The last execution's child when it reported its end before exiting, until `finish`."""

    def start_zygote(self) -> None:
        """Fork the process that will fork every spare (call once, after start-up is done)."""
        self.zygote = start_zygote(self.prep)

    def _fork_spare(self) -> Spare:
        if self.zygote is None:
            self.start_zygote()
        assert self.zygote is not None
        return self.zygote.fork_spare(self._workdir())

    def _workdir(self) -> str:
        self.counter += 1
        path = os.path.join(self.jail.work_base, f'w{self.counter}')
        if os.path.lexists(path):
            shutil.rmtree(path, ignore_errors=True)
        os.mkdir(path, 0o700)
        self._give_to_slot(path)
        return path

    def _give_to_slot(self, path: str | int) -> None:
        """Make ``path`` (or an open descriptor) the slot uid's (when there is one and we may)."""
        if self.jail.uid is not None and os.getuid() == 0:
            os.chown(path, self.jail.uid, self.jail.gid if self.jail.gid is not None else self.jail.uid)

    def _write_files(self, workdir: str, files: dict[str, str], imports: dict[str, str]) -> None:
        for name, text in files.items():
            self._check_name(name)
            fd = os.open(os.path.join(workdir, name), _NEW_FILE, 0o644)
            try:
                write_all(fd, text.encode('utf-8', 'surrogateescape'))
                self._give_to_slot(fd)
            finally:
                os.close(fd)
        for name, src in imports.items():
            self._check_name(name)
            dst = os.path.join(workdir, name)
            shutil.copyfile(src, dst)
            os.chmod(dst, 0o755)
            self._give_to_slot(dst)

    @staticmethod
    def _check_name(name: str) -> None:
        if not name or '/' in name or name in ('.', '..'):
            raise ValueError(f'bad file name {name!r}')

    def _export(self, workdir: str, exports: dict[str, str]) -> None:
        """Copy produced files (e.g. a compiled binary) out of the work dir, atomically."""
        for name, dst in exports.items():
            self._check_name(name)
            src = os.path.join(workdir, name)
            if os.path.islink(src) or not os.path.isfile(src):
                continue
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            tmp = f'{dst}.tmp{os.getpid()}'
            shutil.copyfile(src, tmp)
            os.chmod(tmp, 0o755)
            os.replace(tmp, dst)

    def _take_spare(self) -> Spare:
        spare, self.spare = self.spare, None
        if spare is not None and spare.alive():
            return spare
        if spare is not None:
            spare.discard()
            shutil.rmtree(spare.workdir, ignore_errors=True)
        return self._fork_spare()

    def refill(self) -> None:
        """Fork the next execution's child ahead of its request (off the critical path)."""
        if self.spare is None:
            self.spare = self._fork_spare()

    def handle(self, header: dict[str, Any], blobs: list[bytes]) -> tuple[dict[str, Any], tuple[bytes, ...]]:
        """Run one request and build the reply."""
        op = header.get('op')
        if op == 'ping':
            return {'ok': True, 'tier': self.jail.tier, 'detail': self.jail.detail}, ()
        if op != 'exec':
            return {'ok': False, 'error': f'unknown op {op!r}'}, ()
        self.finish()
        limits = self.jail.effective_limits(Limits.from_dict(header.get('limits') or {}))
        spare = self._take_spare()
        workdir = spare.workdir
        started = done = False
        try:
            files = dict(header.get('files') or {})
            source = header.get('python_source')
            filename = header.get('python_filename') or 'source.py'
            if source is not None:  # on disk too, for tracebacks' source lines
                files[filename] = source
            self._write_files(workdir, files, header.get('imports') or {})
            plan = {
                'rlimits': rlimits(limits, set_nproc=self.jail.uid is not None),
                'argv': list(header.get('argv') or []),
                'python_source': source,
                'python_filename': filename,
            }
            done_fd = None if source is None else self._done_fifo(workdir, plan)
            started = True
            outcome = execute(spare, plan, blobs[0] if blobs else b'', limits, self._kill_all, done_fd)
            done = True  # execute() killed everything the execution started, or `finish` will
            self._exiting = outcome.exiting_pid
            outcome.memory_exceeded = self.jail.memory_exceeded(outcome)
            if outcome.exit_code == 0 and not outcome.timed_out:
                self._export(workdir, header.get('exports') or {})
        finally:
            if not started:
                spare.discard()
            self._leftover = workdir  # removed by `finish`, after the reply is sent
            if not done:
                self.jail.forget_oom_count()
                self._kill_all(0)
                self.finish()
        return _reply(outcome), (bytes(outcome.stdout), bytes(outcome.stderr))

    def _done_fifo(self, workdir: str, plan: dict[str, Any]) -> int:
        """Make the FIFO warm Python reports its end in (`judge.sandbox.warm`); its read end.

        Beside the work dir, not in it (programs list their directory), and writable only by the
        slot's uid, so that no other slot's program can end this execution early.
        """
        path = plan['done_path'] = _done_path(workdir)
        try:
            os.mkfifo(path, 0o600)
        except FileExistsError:  # left by an execution that failed before `finish`
            os.unlink(path)
            os.mkfifo(path, 0o600)
        self._give_to_slot(path)
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)

    def finish(self) -> None:
        """Kill, reap and remove what the last execution left, off the reply's path.

        Waits until every process of the execution is gone (so its memory is free again) before the
        slot runs anything else.
        """
        pid, self._exiting = self._exiting, None
        if pid is not None:
            kill_process_group(pid)  # it is exiting already, unless its report was a lie
            if self.zygote is not None:
                try:
                    self.zygote.reap(pid)  # first: the slot's cgroup is only empty once it is gone
                except ZygoteLost:  # the reply went out fine: fork a new zygote for the next one
                    logger.error('the zygote died; starting a new one')
                    self.zygote.close()
                    self.zygote = None
            self.jail.kill_all()
        workdir, self._leftover = self._leftover, None
        if workdir is not None:
            reap_orphans()
            _remove_tree(workdir)
            try:
                os.unlink(_done_path(workdir))
            except FileNotFoundError:
                pass

    def _kill_all(self, pid: int) -> None:
        if pid:
            kill_process_group(pid)
        self.jail.kill_all()

    def serve(self, rfd: int, wfd: int) -> None:
        """Answer requests until the channel closes."""
        send_message(wfd, {'ok': True, 'tier': self.jail.tier, 'detail': self.jail.detail, 'pid': os.getpid()})
        while True:
            try:
                header, blobs = recv_message(rfd)
            except ProtocolError:
                self.finish()
                return
            lost = False
            try:
                reply, out = self.handle(header, blobs)
            except Exception as exc:
                lost = isinstance(exc, ZygoteLost)
                logger.exception('request failed')
                reply, out = {'ok': False, 'error': f'{type(exc).__name__}: {exc}'}, ()
            send_message(wfd, reply, out)
            self.finish()  # after the reply is out, before anything else runs in the slot
            try:
                if not lost:
                    self.refill()
            except ZygoteLost:
                lost = True
            except OSError:
                logger.exception('could not fork a spare child; will retry on the next request')
            if lost:  # exit: the worker starts a new slot server on its next request
                logger.error('the zygote is gone; the slot server exits')
                return


def _remove_tree(path: str) -> None:
    """Remove a work dir whose processes are all dead: its files one by one, the rest by `shutil.rmtree`.

    A work dir usually holds a few plain files; unlinking them by name beside one open descriptor
    costs a third of `shutil.rmtree`'s checks and system calls.  Unlinking never follows a symlink.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
        return
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                if not entry.is_dir(follow_symlinks=False):
                    try:
                        os.unlink(entry.name, dir_fd=fd)
                    except OSError:  # left for shutil.rmtree below
                        pass
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except OSError:  # a subdirectory, or anything unlink could not remove
        shutil.rmtree(path, ignore_errors=True)


def _done_path(workdir: str) -> str:
    return f'{workdir}.done'


def _reply(outcome: ExecOutcome) -> dict[str, Any]:
    return {
        'ok': outcome.setup_error is None,
        'error': outcome.setup_error,
        'exit_code': outcome.exit_code,
        'signal': outcome.signal,
        'timed_out': outcome.timed_out,
        'output_exceeded': outcome.output_exceeded,
        'memory_exceeded': outcome.memory_exceeded,
        'wall_s': outcome.wall_s,
        'cpu_s': outcome.cpu_s,
        'max_rss_kb': outcome.max_rss_kb,
        'stdout_bytes': outcome.stdout_bytes,
        'stderr_bytes': outcome.stderr_bytes,
    }


def main(argv: list[str]) -> int:
    """Entry point: ``server.py <config-json>``; requests on fd 0, replies on fd 1."""
    config = json.loads(argv[1])
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    rfd, wfd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    try:
        server = SlotServer(config)
    except Exception as exc:
        send_message(wfd, {'ok': False, 'error': f'{type(exc).__name__}: {exc}'})
        return 1
    gc.collect()
    gc.freeze()  # children then never touch (copy) the server's objects for garbage collection
    server.start_zygote()
    server.refill()
    server.serve(rfd, wfd)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
