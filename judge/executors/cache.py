"""The node's compile cache on disk: one record (``.json``) beside each artifact, a lock per
source, and the size bound (least recently used entries go first)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from typing import Any

META_SUFFIX = '.json'
LOCK_SUFFIX = '.lock'
META_VERSION = 2
"""Records of failures older than this version are ignored: they cached any failure, not only
the compiler's diagnostics."""
FAILURE_TTL_S = 300.0
"""How long a compile error stays cached: long enough for one job's tests, short enough that a
failure caused by the node (a broken toolchain, since fixed) does not stick."""


def read_record(artifact: str) -> dict[str, Any] | None:
    """The usable record of ``artifact`` (touched for the LRU bound), or None: compile again."""
    try:
        with open(artifact + META_SUFFIX, encoding='utf-8') as f:
            record: dict[str, Any] = json.load(f)
    except (OSError, ValueError):
        if os.path.isfile(artifact):  # an artifact without its record (older layout)
            return {'ok': True}
        return None
    ok = bool(record.get('ok'))
    if ok and not os.path.isfile(artifact):
        return None
    if not ok and record.get('v') != META_VERSION:
        return None
    if not ok and time.time() - float(record.get('at', 0.0)) > FAILURE_TTL_S:
        return None
    with contextlib.suppress(OSError):
        os.utime(artifact + META_SUFFIX)
    return record


def write_record(artifact: str, ok: bool, stderr: bytes, wall_s: float) -> None:
    """Record a compile's outcome beside its artifact (atomically)."""
    record = {
        'v': META_VERSION,
        'ok': ok,
        'stderr': stderr[-64 * 1024 :].decode('utf-8', 'surrogateescape'),
        'wall_s': round(wall_s, 6),
        'at': time.time(),
    }
    os.makedirs(os.path.dirname(artifact), exist_ok=True)
    tmp = f'{artifact}{META_SUFFIX}.tmp{os.getpid()}'
    with open(tmp, 'w', encoding='utf-8') as f:
        json.dump(record, f)
    os.replace(tmp, artifact + META_SUFFIX)


@contextlib.contextmanager
def locked(artifact: str) -> Iterator[None]:
    """Hold the artifact's lock: one compile of a source per node at a time."""
    os.makedirs(os.path.dirname(artifact), exist_ok=True)
    with open(artifact + LOCK_SUFFIX, 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def evict(cache_dir: str, max_bytes: int, keep: tuple[str, ...] = ()) -> int:
    """Delete the least recently used compile results until ``cache_dir`` holds at most ``max_bytes``.

    An entry is an artifact plus its ``.json`` record; its age is the record's mtime (touched on
    every hit).  Directories named in ``keep`` (the PCH) are neither counted nor deleted.  Returns
    the number of entries deleted.
    """
    entries: list[tuple[float, int, str]] = []
    total = 0
    for kind in os.listdir(cache_dir):
        if kind in keep:
            continue
        for dirpath, _, names in os.walk(os.path.join(cache_dir, kind)):
            for name in names:
                if not name.endswith(META_SUFFIX):
                    continue
                base = os.path.join(dirpath, name[: -len(META_SUFFIX)])
                size = 0
                for path in (base, base + META_SUFFIX):
                    with contextlib.suppress(OSError):
                        size += os.stat(path).st_size
                with contextlib.suppress(OSError):
                    entries.append((os.stat(base + META_SUFFIX).st_mtime, size, base))
                    total += size
    deleted = 0
    for _, size, base in sorted(entries):
        if total <= max_bytes:
            break
        for path in (base + META_SUFFIX, base):  # record first: a reader then sees a miss, never a half entry
            with contextlib.suppress(OSError):
                os.unlink(path)
        total -= size
        deleted += 1
    return deleted


def make_room(cache_dir: str, max_bytes: int, need_bytes: int, keep: tuple[str, ...] = ()) -> int:
    """Evict (`evict`) until ``need_bytes`` more fit under ``max_bytes``; the number of entries deleted."""
    if not os.path.isdir(cache_dir):
        return 0
    return evict(cache_dir, max(0, max_bytes - need_bytes), keep)
