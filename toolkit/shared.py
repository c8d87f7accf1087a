"""One ``RequestProcessor`` per (event loop, base URL, policy), shared by the whole process.

verl 0.7-0.8 instantiate tools once per trajectory and RLinf/Ray run many coroutines per worker
process; a batcher held by a tool instance would then never batch and would leak connections.
``get_shared`` must be called inside the running loop (tools do it in ``create``/``execute``).
"""

from __future__ import annotations

import asyncio
import weakref

from toolkit.batcher import RequestProcessor
from toolkit.client import DEFAULT_BASE_URL
from toolkit.policy import BatchPolicy

__all__ = ['close_shared', 'get_shared']

_SHARED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, BatchPolicy], RequestProcessor]] = (
    weakref.WeakKeyDictionary()
)


def get_shared(base_url: str = DEFAULT_BASE_URL, policy: BatchPolicy | None = None) -> RequestProcessor:
    """The process-wide processor for (running loop, ``base_url``, ``policy``); made on first use."""
    loop = asyncio.get_running_loop()
    key = (base_url.rstrip('/'), policy or BatchPolicy())
    per_loop = _SHARED.setdefault(loop, {})
    proc = per_loop.get(key)
    if proc is None or proc.closed:
        proc = per_loop[key] = RequestProcessor(key[0], key[1])
    return proc


async def close_shared(*, drain_timeout_s: float = 5.0) -> None:
    """Close every shared processor of the running loop (call at the end of a rollout/bench)."""
    per_loop = _SHARED.pop(asyncio.get_running_loop(), {})
    await asyncio.gather(*(p.close(drain_timeout_s=drain_timeout_s) for p in per_loop.values()))
