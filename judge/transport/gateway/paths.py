"""The gateway's dispatchers, one per broker shard, on the path ``JUDGE_TRANSPORT`` names."""

from __future__ import annotations

from celery import Celery

from judge.errors import ConfigError
from judge.settings import Settings
from judge.transport.config import wiring
from judge.transport.gateway.dispatch import Dispatcher
from judge.transport.gateway.outage import BrokerHealth, OutageObserver
from judge.transport.gateway.router import Router, ShardLink
from judge.transport.shard import Shard


def open_dispatcher(app: Celery, shard: Shard, path: str, health: BrokerHealth | None = None) -> Dispatcher:
    """A `Dispatcher` for ``shard`` on path ``fast`` or ``stock``."""
    if path == 'fast':
        from judge.transport import internals
        from judge.transport.gateway.fastpath import FastPath

        internals.verify()
        return Dispatcher(shard, FastPath(app, shard), health)
    if path == 'stock':
        from judge.transport.gateway.stockpath import StockPath

        return Dispatcher(shard, StockPath(app, shard), health)
    raise ConfigError(f'JUDGE_TRANSPORT must be fast or stock, not {path!r}')


def shard_app(app: Celery, settings: Settings, index: int) -> Celery:
    """The Celery app of shard ``index``: ``app`` itself for this process's shard, else a twin of it
    (the same configuration, ``celeryconfig``) whose broker and result backend are that shard's Redis."""
    if index == settings.worker_shard:
        return app
    twin = Celery(app.main, set_as_current=False)
    twin.config_from_object('celeryconfig')
    url = settings.shard_urls[index]
    shard_settings = settings.model_copy(update={'worker_shard': index})
    twin.conf.update(broker_url=url, result_backend=url, broker_transport=wiring(shard_settings).broker_transport)
    return twin


def open_router(app: Celery, settings: Settings, observer: OutageObserver | None = None) -> Router:
    """A `Router` over every shard of ``settings`` (one shard: `REDIS_URI`); ``observer`` hears of
    each shard's recoveries and republished submissions."""
    links = []
    for shard in Shard.all_from_settings(settings):
        shard_celery = shard_app(app, settings, shard.index)
        health = BrokerHealth(shard, settings.broker_outage_s, observer)
        links.append(ShardLink(shard, shard_celery, open_dispatcher(shard_celery, shard, settings.transport, health)))
    return Router(links)
