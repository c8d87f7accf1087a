"""A thin async HTTP client for the gateway (aiohttp), plus the retry policy the batcher uses.

``JudgeClient`` maps every failure onto :mod:`toolkit.errors` so that callers only ever see a
``Result`` or a ``ToolkitError``.  It owns one ``aiohttp.ClientSession`` with a keep-alive pool,
created lazily inside the running event loop, unless the caller passes its own session.

Usage::

    async with JudgeClient('http://127.0.0.1:8088') as client:
        [res] = await client.run_batch([Submission('print(1 + 1)')])
"""

from __future__ import annotations

import email.utils
import json
import logging
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any

import aiohttp

from toolkit.errors import (
    BadResponse,
    JudgeBusy,
    JudgeUnavailable,
    RequestRejected,
    RequestTimeout,
    ToolkitError,
)
from toolkit.models import Result, Submission

__all__ = ['DEFAULT_BASE_URL', 'POOL_IDLE_S', 'JudgeClient', 'parse_retry_after']

POOL_IDLE_S = 30.0
"""How long an idle connection stays in the client's pool: below the gateway's keep-alive
(``JUDGE_GATEWAY_KEEP_ALIVE_S``, 75 s), so that the gateway never closes one the client is about to use."""

logger = logging.getLogger('toolkit.client')

DEFAULT_BASE_URL = 'http://127.0.0.1:8088'
"""Where ``python -m judge.stack`` (and rStar's YAML: localhost:8088) puts the gateway."""


def parse_retry_after(value: str | None, *, now_s: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date), or ``None``."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now_s is None else now_s))


class JudgeClient:
    """Async client for the gateway's routes.

    :param base_url: e.g. ``'http://127.0.0.1:8088'``.
    :param session: an externally owned ``aiohttp.ClientSession`` (never closed by us).
    :param timeout_s: default timeout of one HTTP request.
    :param max_connections: size of the keep-alive pool of the session we create.
    :param pool_idle_s: how long that session keeps an idle connection for reuse; keep it below the idle
        timeout of the gateway (`POOL_IDLE_S` is) and of any proxy in between, which may close it first.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        session: aiohttp.ClientSession | None = None,
        timeout_s: float = 120.0,
        max_connections: int = 32,
        pool_idle_s: float = POOL_IDLE_S,
    ) -> None:
        self.base_url = base_url.rstrip('/')
        self.timeout_s = timeout_s
        self.max_connections = max_connections
        self.pool_idle_s = pool_idle_s
        self._session = session
        self._owns_session = session is None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self.max_connections, keepalive_timeout=self.pool_idle_s)
            self._session = aiohttp.ClientSession(connector=connector)
            self._owns_session = True
        return self._session

    async def request(self, method: str, path: str, body: Any = None, *, timeout_s: float | None = None) -> Any:
        """Send one request and return the decoded JSON answer; raise a ``ToolkitError`` on failure."""
        url = self.base_url + path
        timeout = aiohttp.ClientTimeout(total=self.timeout_s if timeout_s is None else timeout_s)
        data = None if body is None else json.dumps(body, separators=(',', ':'))
        headers = {'Content-Type': 'application/json'} if data is not None else None
        try:
            async with self._get_session().request(method, url, data=data, headers=headers, timeout=timeout) as resp:
                raw = await resp.read()
                status = resp.status
                retry_after = parse_retry_after(resp.headers.get('Retry-After'))
        except TimeoutError as e:
            raise RequestTimeout(f'{method} {url}: no answer within {timeout.total} s') from e
        except aiohttp.ClientError as e:
            raise JudgeUnavailable(f'{method} {url}: {type(e).__name__}: {e}') from e
        except OSError as e:
            raise JudgeUnavailable(f'{method} {url}: {e}') from e
        if status != 200:
            raise _status_error(method, url, status, raw, retry_after)
        try:
            return json.loads(raw)
        except ValueError as e:
            raise BadResponse(f'{method} {url}: answer is not JSON: {raw[:200]!r}') from e

    async def post_batch(
        self, path: str, subs: Sequence[Submission], *, timeout_s: float | None = None
    ) -> list[Result]:
        """POST ``subs`` as one batch to ``path`` (e.g. ``'/run/long-batch'``); results in order."""
        body = {'type': 'batch', 'submissions': [s.to_json() for s in subs]}
        answer = await self.request('POST', path, body, timeout_s=timeout_s)
        results = answer.get('results') if isinstance(answer, dict) else None
        if not isinstance(results, list) or len(results) != len(subs):
            got = len(results) if isinstance(results, list) else type(results).__name__
            raise BadResponse(f'POST {path}: expected {len(subs)} results, got {got}')
        return [Result.from_json(r) for r in results]

    async def run(self, sub: Submission, *, timeout_s: float | None = None) -> Result:
        """``POST /run``: one submission, stdout/stderr included."""
        return Result.from_json(await self.request('POST', '/run', sub.to_json(), timeout_s=timeout_s))

    async def judge(self, sub: Submission, *, timeout_s: float | None = None) -> Result:
        """``POST /judge``: one submission, no stdout/stderr in the answer."""
        return Result.from_json(await self.request('POST', '/judge', sub.to_json(), timeout_s=timeout_s))

    async def run_batch(
        self, subs: Sequence[Submission], *, long: bool = True, timeout_s: float | None = None
    ) -> list[Result]:
        """``POST /run/long-batch`` (or ``/run/batch`` with ``long=False``)."""
        return await self.post_batch('/run/long-batch' if long else '/run/batch', subs, timeout_s=timeout_s)

    async def judge_batch(
        self, subs: Sequence[Submission], *, long: bool = True, timeout_s: float | None = None
    ) -> list[Result]:
        """``POST /judge/long-batch`` (or ``/judge/batch`` with ``long=False``)."""
        return await self.post_batch('/judge/long-batch' if long else '/judge/batch', subs, timeout_s=timeout_s)

    async def ping(self, *, timeout_s: float = 5.0) -> bool:
        """True when ``GET /ping`` answers ``"pong"``; never raises."""
        try:
            return bool(await self.request('GET', '/ping', timeout_s=timeout_s) == 'pong')
        except ToolkitError:
            return False

    async def status(self, *, timeout_s: float = 10.0) -> dict[str, Any]:
        """``GET /status``: at least ``queue`` and ``num_workers``."""
        answer = await self.request('GET', '/status', timeout_s=timeout_s)
        if not isinstance(answer, dict):
            raise BadResponse(f'GET /status: expected an object, got {type(answer).__name__}')
        return answer

    async def close(self) -> None:
        """Close the session if we created it."""
        if self._session is not None and self._owns_session and not self._session.closed:
            await self._session.close()
        self._session = None

    async def __aenter__(self) -> JudgeClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


def _status_error(method: str, url: str, status: int, raw: bytes, retry_after_s: float | None) -> ToolkitError:
    detail = raw[:300].decode('utf-8', 'replace')
    msg = f'{method} {url}: HTTP {status}: {detail}'
    if status == 429:
        return JudgeBusy(msg, status=status, retry_after_s=retry_after_s)
    if status >= 500:
        return JudgeUnavailable(msg, status=status, retry_after_s=retry_after_s)
    return RequestRejected(msg, status=status)
