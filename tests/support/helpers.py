"""Small HTTP helpers for tests (stdlib only, real HTTP)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any


def request(
    url: str,
    body: Any = None,
    *,
    raw: bytes | None = None,
    timeout_s: float = 120.0,
    method: str | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """Send a JSON (or raw) request; return (status, decoded JSON or text)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, method=method or ('POST' if data is not None else 'GET'))
    req.add_header('content-type', 'application/json')
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            status, payload = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        status, payload = e.code, e.read()
    try:
        return status, json.loads(payload)
    except ValueError:
        return status, payload.decode(errors='replace')


def post(base: str, path: str, body: Any, timeout_s: float = 120.0) -> Any:
    """POST JSON and return the decoded answer, asserting HTTP 200."""
    status, payload = request(base + path, body, timeout_s=timeout_s)
    assert status == 200, (status, payload)
    return payload


def assert_stack_judges(base: str, route: str = '/run/batch', n: int = 10, workers: int = 2) -> None:
    """A single run, a batch of ``n`` in order, and a healthy `/status` with ``workers`` processes."""
    r = post(base, '/run', {'type': 'python', 'solution': 'print(6 * 7)', 'expected_output': '42'})
    assert r['success'] and r['stdout'] == '42\n', r
    subs = [{'type': 'python', 'solution': f'print({i})'} for i in range(n)]
    batch = post(base, route, {'type': 'batch', 'submissions': subs})
    assert [x['stdout'] for x in batch['results']] == [f'{i}\n' for i in range(n)]
    status, body = request(base + '/status')
    assert status == 200 and body['broker'] == 'ok' and body['num_workers'] == workers, body


def gateway_status(base: str) -> dict[str, Any]:
    """The gateway's `/status` (asserting a 200)."""
    code, body = request(base + '/status', timeout_s=10)
    assert code == 200, body
    return dict(body)


def wait_for(cond: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Poll ``cond`` until true; return the seconds it took."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if cond():
            return time.monotonic() - start
        time.sleep(0.05)
    raise AssertionError(f'{what}: not within {timeout_s}s')
