"""A real sandbox slot for tests that drive `SlotClient` directly."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from judge.runtime import submission_python
from judge.sandbox.client import SlotClient, SlotConfig
from judge.sandbox.slots import claim_slot
from judge.settings import Settings
from judge.worker.service import run_limits

PYTHON = submission_python(Settings())
"""The submission runtime's interpreter, as the worker runs it."""
RUN_LIMITS = run_limits(Settings())
"""The worker's run limits under the default settings (tests `_replace` what they need)."""


@contextlib.contextmanager
def open_slot(tag: str, **config: Any) -> Iterator[SlotClient]:
    """Claim a host slot and start its server (work root ``/tmp/judge-test-<tag>-<pid>``; ``config``:
    more `SlotConfig` fields, memory and pids from `RUN_LIMITS` by default); stopped and given back on exit."""
    index, lock_fd = claim_slot()
    config.setdefault('python', PYTHON)
    config.setdefault('memory_mb', RUN_LIMITS.memory_mb)
    config.setdefault('pids', RUN_LIMITS.pids)
    client = SlotClient(SlotConfig(slot=index, work_root=f'/tmp/judge-test-{tag}-{os.getpid()}', **config))
    try:
        client.ensure_started()
        yield client
    finally:
        client.close()
        os.close(lock_fd)
