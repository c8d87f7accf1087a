"""Redis connections from the settings: plain, TLS (``rediss://``) and Sentinel.

Gateway, workers and Flower read the same settings: Celery's broker and result backend through
`celery_redis_options`, the judge's own clients through `sync_client` / `async_client`.

* TLS: ``REDIS_URI=rediss://host:6380/0`` plus ``JUDGE_REDIS_TLS_CA_FILE`` (and, for client
  certificates, ``JUDGE_REDIS_TLS_CERT_FILE`` / ``JUDGE_REDIS_TLS_KEY_FILE``); certificates are
  verified unless ``JUDGE_REDIS_TLS_VERIFY=none``.
* Sentinel: ``REDIS_URI=sentinel://s1:26379;sentinel://s2:26379/0`` plus
  ``JUDGE_REDIS_SENTINEL_MASTER`` (the monitored master's name).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import redis
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry as AsyncRetry
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel

from judge.errors import ConfigError

_VERIFY = {'required': ssl.CERT_REQUIRED, 'optional': ssl.CERT_OPTIONAL, 'none': ssl.CERT_NONE}
_CLIENT_OPTIONS: dict[str, Any] = {'socket_connect_timeout': 5, 'socket_keepalive': True, 'health_check_interval': 25}
# One retry, on a fresh connection, after a connection error (a pooled connection that died with a
# restarted Redis); none after a timeout, so a paused Redis fails a command after one socket timeout
# (redis-py's default, ten retries with backoff, would hide an outage for up to ten timeouts).
_RETRIES = 1


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
            raise ConfigError(f'not a sentinel URL: {part!r}')
        hosts.append((parsed.hostname, parsed.port or 26379))
        if parsed.path.strip('/'):
            db = int(parsed.path.strip('/'))
    return hosts, db


@dataclass(frozen=True)
class RedisAddress:
    """Where one Redis is and how to reach it (URL, TLS files, Sentinel master)."""

    url: str
    tls_verify: str = 'required'
    tls_ca_file: str = ''
    tls_cert_file: str = ''
    tls_key_file: str = ''
    sentinel_master: str = 'mymaster'
    extra: dict[str, Any] = field(default_factory=dict)

    def tls_options(self) -> dict[str, Any]:
        """redis-py keyword arguments for a ``rediss://`` URL (empty for plain connections)."""
        if not self.url.startswith('rediss://'):
            return {}
        options: dict[str, Any] = {'ssl_cert_reqs': self.tls_verify}
        if self.tls_ca_file:
            options['ssl_ca_certs'] = self.tls_ca_file
        if self.tls_cert_file:
            options['ssl_certfile'] = self.tls_cert_file
        if self.tls_key_file:
            options['ssl_keyfile'] = self.tls_key_file
        return options

    def celery_redis_options(self) -> dict[str, Any]:
        """Celery settings for TLS (``broker_use_ssl``, ``redis_backend_use_ssl``) and Sentinel (``master_name``)."""
        out: dict[str, Any] = {}
        tls = self.tls_options()
        if tls:
            tls['ssl_cert_reqs'] = _VERIFY[self.tls_verify]
            out['use_ssl'] = tls
        if is_sentinel(self.url):
            out['master_name'] = self.sentinel_master
        return out

    def sync_client(self, **extra: Any) -> redis.Redis:
        """A redis-py client (for workers)."""
        retry = Retry(NoBackoff(), _RETRIES, supported_errors=(redis.ConnectionError,))
        options = {**_CLIENT_OPTIONS, 'retry': retry, **self.extra, **extra}
        if is_sentinel(self.url):
            hosts, db = sentinel_hosts(self.url)
            sentinel = Sentinel(hosts, socket_timeout=5)  # type: ignore[no-untyped-call]
            client: redis.Redis = sentinel.master_for(self.sentinel_master, db=db, **options)  # type: ignore[no-untyped-call]
            return client
        return redis.Redis.from_url(self.url, **self.tls_options(), **options)

    def async_client(self, **extra: Any) -> aioredis.Redis:
        """An asyncio redis-py client (for the gateway)."""
        retry = AsyncRetry(NoBackoff(), _RETRIES, supported_errors=(redis.ConnectionError,))
        options = {**_CLIENT_OPTIONS, 'retry': retry, **self.extra, **extra}
        if is_sentinel(self.url):
            hosts, db = sentinel_hosts(self.url)
            sentinel = AsyncSentinel(hosts, socket_timeout=5)  # type: ignore[no-untyped-call]
            client: aioredis.Redis = sentinel.master_for(self.sentinel_master, db=db, **options)
            return client
        return aioredis.Redis.from_url(self.url, **self.tls_options(), **options)
