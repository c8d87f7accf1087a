"""The gateway's access log: one line per request with its batch id, trace id and sub_ids.

With the worker's per-execution lines (``sub_id=... batch=...``) and Flower's task view (whose
arguments show the same ids), one grep follows a submission from request to verdict.  Clients may
pass their own trace id in the ``X-Request-ID`` (or ``X-Trace-ID``) header; it is appended to the
batch id everywhere.
"""

from __future__ import annotations

import collections
import logging
import re

from fastapi import Request

from judge.contracts import ResultDict, RunPayload

logger = logging.getLogger('api.observe.access')

_TRACE_HEADERS = ('x-request-id', 'x-trace-id')
_UNSAFE = re.compile(r'[^A-Za-z0-9._:@-]')
_MAX_LOGGED_IDS = 100


def trace_id(request: Request) -> str:
    """The client's trace id, reduced to safe characters (empty when none was sent)."""
    for name in _TRACE_HEADERS:
        value = request.headers.get(name)
        if value:
            return _UNSAFE.sub('_', value)[:128]
    return ''


def log_request(path: str, label: str, subs: list[RunPayload], results: list[ResultDict], elapsed_s: float) -> None:
    """Log the request's outcome (INFO), with up to 100 of its sub_ids."""
    if not logger.isEnabledFor(logging.INFO):
        return
    verdicts = collections.Counter(str(r.get('verdict')) for r in results)
    ids = [str(s['sub_id']) for s in subs[:_MAX_LOGGED_IDS]]
    more = f' (+{len(subs) - _MAX_LOGGED_IDS} more)' if len(subs) > _MAX_LOGGED_IDS else ''
    logger.info(
        '%s batch=%s n=%d elapsed=%.3fs verdicts=%s sub_ids=%s%s',
        path,
        label,
        len(subs),
        elapsed_s,
        dict(verdicts),
        ','.join(ids),
        more,
    )


def configure(level: str) -> None:
    """Give the gateway's `api.*` loggers a stderr handler (uvicorn configures only its own)."""
    root = logging.getLogger('api')
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter('%(asctime)s %(levelname)s %(name)s: %(message)s'))
        root.addHandler(handler)
        root.propagate = False
    root.setLevel(level.upper())
