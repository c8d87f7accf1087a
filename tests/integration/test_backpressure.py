"""Back-pressure of the real gateway: 429 + Retry-After over the in-flight cap, 413 for big bodies/batches.

The gateway under test uses the session's redis-server but its own database, which no worker
consumes: what it enqueues stays in the queue (and its requests stay in flight until their deadline),
so "nothing was enqueued" is an exact queue-depth check rather than a race with the worker.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis

from judge.transport.keys import KeySpace
from tests.support.helpers import request
from tests.support.metrics import scrape, value
from tests.support.processes.services import start_gateway
from tests.support.processes.stack import Stack

pytestmark = pytest.mark.integration

MAX_IN_FLIGHT = 3
RETRY_AFTER_S = 3
MAX_BATCH = 5
MAX_BODY_BYTES = int(0.01 * 1024 * 1024)


@dataclass
class Gateway:
    url: str
    redis: redis.Redis


@pytest.fixture(scope='module')
def bp_gateway(stack: Stack) -> Iterator[Gateway]:
    redis_url = stack.redis_url.rsplit('/', 1)[0] + '/3'
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    env = {
        **stack.env,
        'REDIS_URI': redis_url,
        'JUDGE_MAX_IN_FLIGHT': str(MAX_IN_FLIGHT),
        'JUDGE_RETRY_AFTER_S': str(RETRY_AFTER_S),
        'JUDGE_MAX_BATCH_SIZE': str(MAX_BATCH),
        'JUDGE_MAX_BODY_MB': '0.01',
        # Nobody consumes this database: requests wait for the short deadline (1 + 5 + 0 s), then
        # answer queue_timeout.
        'MAX_EXECUTION_TIME': '1',
        'MAX_QUEUE_WORK_LIFE_TIME': '0',
    }
    svc, url = start_gateway(env, stack.log_dir)
    try:
        yield Gateway(url, client)
    finally:
        svc.stop()
        client.flushdb()
        client.close()


def _sub(i: int) -> dict[str, Any]:
    return {'type': 'python', 'solution': f'print({i})', 'sub_id': f'bp-{i}'}


def _batch(n: int) -> dict[str, Any]:
    return {'type': 'batch', 'submissions': [_sub(i) for i in range(n)]}


def _post(url: str, path: str, body: Any) -> tuple[int, dict[str, str], Any]:
    """POST JSON; return status, headers (lower-case names) and decoded body."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.request('POST', path, body=json.dumps(body), headers={'Content-Type': 'application/json'})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, json.loads(resp.read())
    finally:
        conn.close()


def _depth(gw: Gateway) -> int:
    return sum(int(gw.redis.llen(key)) for _, _, key in KeySpace().queue_lists())


def test_body_over_limit_by_content_length_is_413(bp_gateway: Gateway) -> None:
    raw = json.dumps({'type': 'python', 'solution': '#' + 'x' * MAX_BODY_BYTES}).encode()
    status, body = request(bp_gateway.url + '/run', raw=raw)
    assert status == 413 and 'JUDGE_MAX_BODY_MB' in body['detail'], (status, body)
    assert _depth(bp_gateway) == 0


def test_chunked_body_over_limit_is_413(bp_gateway: Gateway) -> None:
    parts = urlsplit(bp_gateway.url)
    chunk = b' ' * 1024
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        body = iter([b'{"type": "python", "solution": "print(1)"', *([chunk] * 20), b'}'])
        conn.request('POST', '/run', body=body, headers={'Content-Type': 'application/json'}, encode_chunked=True)
        resp = conn.getresponse()
        status, payload = resp.status, json.loads(resp.read())
    finally:
        conn.close()
    assert status == 413 and 'JUDGE_MAX_BODY_MB' in payload['detail'], (status, payload)
    # A small chunked body still reaches the handler (an invalid one, so that nothing is enqueued: 422).
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.request('POST', '/run', body=iter([b'{"type": "python"', b'}']), encode_chunked=True)
        assert conn.getresponse().status == 422
    finally:
        conn.close()
    assert _depth(bp_gateway) == 0


def test_batch_over_max_batch_size_is_413(bp_gateway: Gateway) -> None:
    status, _, body = _post(bp_gateway.url, '/run/batch', _batch(MAX_BATCH + 1))
    assert status == 413 and 'JUDGE_MAX_BATCH_SIZE' in body['detail'], body
    status, _, body = _post(bp_gateway.url, '/judge/long-batch', _batch(MAX_IN_FLIGHT + 1))
    assert status == 413 and 'JUDGE_MAX_IN_FLIGHT' in body['detail'], body
    assert _depth(bp_gateway) == 0


def test_over_in_flight_cap_is_429_with_retry_after_and_nothing_enqueued(bp_gateway: Gateway) -> None:
    gw = bp_gateway
    before = scrape(gw.url)
    answers: dict[str, tuple[int, dict[str, str], Any]] = {}

    def send(name: str, path: str, body: Any) -> None:
        answers[name] = _post(gw.url, path, body)

    # 2 of 3 slots taken by a batch that waits (nobody consumes this database).
    first = threading.Thread(target=send, args=('batch', '/run/batch', _batch(2)))
    first.start()
    _wait(lambda: _depth(gw) == 2)

    # 2 more do not fit: the handler refuses the whole request before enqueueing any of it.
    status, headers, body = _post(gw.url, '/judge/batch', _batch(2))
    assert status == 429, body
    assert headers['retry-after'] == str(RETRY_AFTER_S)
    assert body['detail']['in_flight'] == 2 and body['detail']['max_in_flight'] == MAX_IN_FLIGHT
    assert _depth(gw) == 2

    # 1 more fits; then the gateway is full and refuses even before reading the body.
    second = threading.Thread(target=send, args=('single', '/run', _sub(9)))
    second.start()
    _wait(lambda: _depth(gw) == 3)
    status, headers, body = _post(gw.url, '/run', _sub(10))
    assert status == 429 and headers['retry-after'] == str(RETRY_AFTER_S), body
    assert body['detail']['in_flight'] == MAX_IN_FLIGHT
    assert _depth(gw) == 3

    during = scrape(gw.url)
    assert value(during, 'judge_in_flight_submissions') == MAX_IN_FLIGHT
    assert value(during, 'judge_queue_depth', queue='judge.batch', priority='0') == 2  # one list per queue
    assert value(during, 'judge_queue_depth', queue='judge.run', priority='0') == 1
    rejected = value(during, 'judge_rejected_requests_total', reason='in_flight')
    assert rejected - value(before, 'judge_rejected_requests_total', reason='in_flight') == 2

    first.join(30)
    second.join(30)
    status, _, body = answers['batch']
    assert status == 200 and [r['reason'] for r in body['results']] == ['queue_timeout'] * 2
    assert answers['single'][0] == 200 and answers['single'][2]['reason'] == 'queue_timeout'
    after = scrape(gw.url)
    assert value(after, 'judge_in_flight_submissions') == 0
    assert value(after, 'judge_infra_failures_total', route='/run/batch', reason='queue_timeout') == 2
    assert value(after, 'judge_infra_failures_total', route='/run', reason='queue_timeout') == 1
    assert value(after, 'judge_submissions_total', language='python', route='/run', verdict='queue_timeout') == 1
    assert value(after, 'judge_execution_seconds_count', language='python') == 0  # infra failures not timed


def _wait(cond: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, 'condition not met in time'
        time.sleep(0.02)
