"""Redis connections from the settings: plain, TLS (``rediss://``) and Sentinel.

Gateway, workers and Flower read the same settings: Celery's broker through `celery_broker_options`
(used by ``celeryconfig.py``), our own reply-list clients through `sync_client` / `async_client`.

* TLS: ``REDIS_URI=rediss://host:6380/0`` plus ``JUDGE_REDIS_TLS_CA_FILE`` (and, for client
  certificates, ``JUDGE_REDIS_TLS_CERT_FILE`` / ``JUDGE_REDIS_TLS_KEY_FILE``); certificates are
  verified unless ``JUDGE_REDIS_TLS_VERIFY=none``.
* Sentinel: ``REDIS_URI=sentinel://s1:26379;sentinel://s2:26379/0`` plus
  ``JUDGE_REDIS_SENTINEL_MASTER`` (the monitored master's name).
"""

from __future__ import annotations

import ssl
from typing import Any
from urllib.parse import urlsplit

import redis
import redis.asyncio as aioredis
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.sentinel import Sentinel

from judge.settings import Settings

_VERIFY = {'required': ssl.CERT_REQUIRED, 'optional': ssl.CERT_OPTIONAL, 'none': ssl.CERT_NONE}
_CLIENT_OPTIONS: dict[str, Any] = {'socket_connect_timeout': 5, 'socket_keepalive': True, 'health_check_interval': 25}


def is_sentinel(url: str) -> bool:
    """Whether ``url`` names Redis Sentinels rather than a server."""
    return url.startswith('sentinel://')


def sentinel_hosts(url: str) -> tuple[list[tuple[str, int]], int]:
    """``sentinel://h1:26379;sentinel://h2:26379/0`` → ([(h1, 26379), (h2, 26379)], db)."""
    hosts: list[tuple[str, int]] = []
    db = 0
    for part in url.split(';'):
        parsed = urlsplit(part.strip())
        if parsed.scheme != 'sentinel' or not parsed.hostname:
            raise ValueError(f'not a sentinel URL: {part!r}')
        hosts.append((parsed.hostname, parsed.port or 26379))
        if parsed.path.strip('/'):
            db = int(parsed.path.strip('/'))
    return hosts, db


def tls_options(settings: Settings) -> dict[str, Any]:
    """redis-py keyword arguments for a ``rediss://`` URL (empty for plain connections)."""
    if not settings.redis_uri.startswith('rediss://'):
        return {}
    options: dict[str, Any] = {'ssl_cert_reqs': settings.redis_tls_verify}
    if settings.redis_tls_ca_file:
        options['ssl_ca_certs'] = settings.redis_tls_ca_file
    if settings.redis_tls_cert_file:
        options['ssl_certfile'] = settings.redis_tls_cert_file
    if settings.redis_tls_key_file:
        options['ssl_keyfile'] = settings.redis_tls_key_file
    return options


def celery_broker_options(settings: Settings) -> dict[str, Any]:
    """Celery settings for TLS (``broker_use_ssl``) and Sentinel (``master_name``)."""
    out: dict[str, Any] = {}
    tls = tls_options(settings)
    if tls:
        tls['ssl_cert_reqs'] = _VERIFY[settings.redis_tls_verify]
        out['broker_use_ssl'] = tls
    if is_sentinel(settings.redis_uri):
        out['master_name'] = settings.redis_sentinel_master
    return out


def sync_client(settings: Settings, **extra: Any) -> redis.Redis:
    """A redis-py client for the configured Redis (for workers)."""
    options = {**_CLIENT_OPTIONS, **extra}
    if is_sentinel(settings.redis_uri):
        hosts, db = sentinel_hosts(settings.redis_uri)
        sentinel = Sentinel(hosts, socket_timeout=5)  # type: ignore[no-untyped-call]
        client: redis.Redis = sentinel.master_for(settings.redis_sentinel_master, db=db, **options)  # type: ignore[no-untyped-call]
        return client
    return redis.Redis.from_url(settings.redis_uri, **tls_options(settings), **options)


def async_client(settings: Settings, **extra: Any) -> aioredis.Redis:
    """An asyncio redis-py client for the configured Redis (for the gateway)."""
    options = {**_CLIENT_OPTIONS, **extra}
    if is_sentinel(settings.redis_uri):
        hosts, db = sentinel_hosts(settings.redis_uri)
        async_sentinel = AsyncSentinel(hosts, socket_timeout=5)  # type: ignore[no-untyped-call]
        async_client_: aioredis.Redis = async_sentinel.master_for(settings.redis_sentinel_master, db=db, **options)
        return async_client_
    return aioredis.Redis.from_url(settings.redis_uri, **tls_options(settings), **options)
