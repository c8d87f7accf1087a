"""Host-wide unique slot numbers: a slot's uid and cgroup are derived from it, so two worker
instances (or test runs) on one host must never share one."""

from __future__ import annotations

import fcntl
import os

from judge.sandbox.errors import NoFreeSlot

LOCK_DIR = '/tmp/judge-slots'
MAX_SLOTS = 4096


def claim_slot(lock_dir: str = LOCK_DIR, start: int = 0) -> tuple[int, int]:
    """Claim the lowest free slot number; returns ``(slot, fd)``, the claim lasts while ``fd`` is open."""
    os.makedirs(lock_dir, mode=0o700, exist_ok=True)
    for index in range(start, MAX_SLOTS):
        fd = os.open(os.path.join(lock_dir, f'slot{index}.lock'), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return index, fd
    raise NoFreeSlot(f'all {MAX_SLOTS} sandbox slots of this host are in use')
