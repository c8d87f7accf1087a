"""Error-case capture (upstream's ``ERROR_CASE_SAVE_PATH``): every failed submission on disk.

For every non-success (and every internal error, with its exception) the worker writes
``<path>/<sub_id>/{submission.json, solution.txt, result.json, exception.txt}``.  Writing happens
on a background thread fed by a bounded queue, so judging never waits for the disk and never fails
because of it (a full queue drops the case and counts it).  The directory is kept under a disk
budget by deleting the oldest cases first.  ``sub_id`` comes from clients, so it is reduced to a
safe file name, and files are created relative to the directory's descriptor without following
symlinks.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import re
import shutil
import threading
import time
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger('judge.worker.error_cases')

_SAFE = re.compile(r'[^A-Za-z0-9._-]')
_MAX_NAME = 100
_QUEUE_SIZE = 1000
_PRUNE_EVERY_S = 5.0


def safe_name(sub_id: str) -> str:
    """A file name for ``sub_id``: its safe characters, plus a hash when anything was changed."""
    cleaned = _SAFE.sub('_', sub_id)[:_MAX_NAME].lstrip('.') or 'case'
    if cleaned != sub_id:
        cleaned = f'{cleaned[:80]}-{hashlib.sha256(sub_id.encode("utf-8", "surrogateescape")).hexdigest()[:16]}'
    return cleaned


def should_save(result: dict[str, Any]) -> bool:
    """Upstream saves every non-success, wrong answers included."""
    return not result.get('success')


@dataclass
class ErrorCaseWriter:
    """Writes cases under ``path`` on a daemon thread, within ``budget_bytes``."""

    path: str
    budget_bytes: int = 1024 * 1024 * 1024
    dropped: int = 0
    written: int = 0
    _queue: queue.Queue[tuple[dict[str, Any], dict[str, Any], str | None]] = field(
        default_factory=lambda: queue.Queue(_QUEUE_SIZE)
    )
    _thread: threading.Thread | None = None
    _last_prune: float = 0.0

    def submit(self, sub: dict[str, Any], result: dict[str, Any], exception: str | None = None) -> None:
        """Queue a case; never blocks and never raises."""
        try:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name='error-cases', daemon=True)
                self._thread.start()
            self._queue.put_nowait((sub, result, exception))
        except queue.Full:
            self.dropped += 1
        except Exception:
            self.dropped += 1
            logger.exception('could not queue an error case')

    def flush(self, timeout_s: float = 5.0) -> None:
        """Wait until queued cases are written (for tests and shutdown)."""
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)

    def _run(self) -> None:
        while True:
            sub, result, exception = self._queue.get()
            try:
                self.write(sub, result, exception)
                self.written += 1
                if time.monotonic() - self._last_prune > _PRUNE_EVERY_S:
                    self._last_prune = time.monotonic()
                    self.prune()
            except Exception:
                logger.exception('could not save error case %r', sub.get('sub_id'))
            finally:
                self._queue.task_done()

    def write(self, sub: dict[str, Any], result: dict[str, Any], exception: str | None) -> str:
        """Write one case now; returns its directory."""
        os.makedirs(self.path, mode=0o700, exist_ok=True)
        base = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            name = safe_name(str(sub.get('sub_id') or 'case'))
            try:
                os.mkdir(name, 0o700, dir_fd=base)
            except FileExistsError:
                pass
            case = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=base)
            try:
                _write_file(case, 'submission.json', json.dumps(sub, ensure_ascii=False, indent=1))
                _write_file(case, 'solution.txt', str(sub.get('solution') or ''))
                _write_file(case, 'result.json', json.dumps(result, ensure_ascii=False, indent=1))
                if exception:
                    _write_file(case, 'exception.txt', exception)
            finally:
                os.close(case)
        finally:
            os.close(base)
        return os.path.join(self.path, name)

    def prune(self) -> None:
        """Delete the oldest cases until the directory fits the budget."""
        entries = []
        total = 0
        with os.scandir(self.path) as it:
            for entry in it:
                if not entry.is_dir(follow_symlinks=False):
                    continue
                size = 0
                with os.scandir(entry.path) as files:
                    for f in files:
                        if f.is_file(follow_symlinks=False):
                            size += f.stat(follow_symlinks=False).st_size
                entries.append((entry.stat(follow_symlinks=False).st_mtime, entry.path, size))
                total += size
        for _, path, size in sorted(entries):
            if total <= self.budget_bytes:
                break
            shutil.rmtree(path, ignore_errors=True)
            total -= size


def _write_file(dir_fd: int, name: str, text: str) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd)
    with os.fdopen(fd, 'w', encoding='utf-8', errors='surrogateescape') as f:
        f.write(text)
