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

PYTHON = submission_python(Settings())
"""The submission runtime's interpreter, as the worker runs it."""


@contextlib.contextmanager
def open_slot(tag: str, **config: Any) -> Iterator[SlotClient]:
    """Claim a host slot and start its server (work root ``/tmp/judge-test-<tag>-<pid>``; ``config``:
    more `SlotConfig` fields); stopped and given back on exit."""
    index, lock_fd = claim_slot()
    config.setdefault('python', PYTHON)
    client = SlotClient(SlotConfig(slot=index, work_root=f'/tmp/judge-test-{tag}-{os.getpid()}', **config))
    try:
        client.ensure_started()
        yield client
    finally:
        client.close()
        os.close(lock_fd)
