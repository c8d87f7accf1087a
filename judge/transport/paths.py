"""The gateway's dispatcher for a shard, on the path ``JUDGE_TRANSPORT`` names."""

from __future__ import annotations

from celery import Celery

from judge.errors import ConfigError
from judge.transport.gateway import Dispatcher
from judge.transport.shard import Shard


def open_dispatcher(app: Celery, shard: Shard, path: str) -> Dispatcher:
    """A `Dispatcher` for ``shard`` on path ``fast`` or ``stock``."""
    if path == 'fast':
        from judge.transport import internals
        from judge.transport.fastpath import FastPath

        internals.verify()
        return Dispatcher(shard, FastPath(app, shard))
    if path == 'stock':
        from judge.transport.stockpath import StockPath

        return Dispatcher(shard, StockPath(app, shard))
    raise ConfigError(f'JUDGE_TRANSPORT must be fast or stock, not {path!r}')


async def close_dispatcher(dispatcher: Dispatcher) -> None:
    """Release the dispatcher's threads and its shard's asyncio client."""
    close = getattr(dispatcher.path, 'close', None)
    if close is not None:
        close()
    await dispatcher.shard.aclose()
