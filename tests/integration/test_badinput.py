"""Bad input gets a clear 4xx or a correct result, never a 5xx or a wrong answer (session stack).

Covers malformed JSON, unknown languages, wrong shapes, binary junk / NUL bytes / lone surrogates in
code, input and ids, empty solutions, oversized bodies and enormous batches.  413 is accepted where
the gateway's body and batch limits (``JUDGE_MAX_BODY_MB``, ``JUDGE_MAX_BATCH_SIZE``) apply.
"""

from __future__ import annotations

import json
import os
import random
from typing import Any

import pytest

from tests.support.helpers import request

pytestmark = pytest.mark.integration

BIG_BATCH = int(os.environ.get('BADINPUT_BIG_BATCH', '2000'))  # 5000 passes too (~45 s on 2 busy cores)
COUNT_STDIN = 'import sys\nprint(len(sys.stdin.buffer.read()))'


def run(url: str, body: Any = None, *, raw: bytes | None = None, path: str = '/run') -> tuple[int, Any]:
    return request(url + path, body, raw=raw, timeout_s=120)


def assert_4xx(status: int, payload: Any) -> None:
    assert 400 <= status < 500, (status, payload)
    assert isinstance(payload, dict) and payload.get('detail'), payload  # says what is wrong


@pytest.mark.parametrize(
    'raw',
    [
        b'{',
        b'not json at all',
        b'',
        b'[1, 2, 3]',
        b'"just a string"',
        b'{"type": "python", "solution": "print(1)"',
        b'{"type": "python", "solution": "print(1)\xff\xfe"}',  # invalid UTF-8 inside the JSON
        b'\x00\x01\x02\xff' * 64,
        b'{"type": "python", "solution": "print(1)"} trailing',
    ],
    ids=['open-brace', 'text', 'empty', 'array', 'string', 'truncated', 'bad-utf8', 'binary', 'trailing'],
)
def test_malformed_bodies_get_4xx(gateway_url: str, raw: bytes) -> None:
    for path in ('/run', '/run/batch', '/judge/long-batch'):
        status, payload = run(gateway_url, raw=raw, path=path)
        assert_4xx(status, payload)


@pytest.mark.parametrize(
    'body',
    [
        {'type': 'brainfuck', 'solution': '+.'},
        {'type': 'math', 'solution': '1+1'},  # upstream validated it, then failed in the worker
        {'type': '', 'solution': 'print(1)'},
        {'type': None, 'solution': 'print(1)'},
        {'type': 7, 'solution': 'print(1)'},
        {'type': 'python'},
        {'type': 'python', 'solution': 12},
        {'type': 'python', 'solution': None},
        {'type': 'python', 'solution': ['print(1)']},
        {'type': 'python', 'solution': 'print(1)', 'input': 5},
        {'type': 'python', 'solution': 'print(1)', 'options': {'a': 1}},
    ],
)
def test_unknown_languages_and_wrong_types_get_422(gateway_url: str, body: dict[str, Any]) -> None:
    status, payload = run(gateway_url, body)
    assert status == 422, (status, payload)
    assert_4xx(status, payload)
    # One bad item makes the whole batch invalid: nothing is run for it.
    status, payload = run(
        gateway_url, {'submissions': [{'type': 'python', 'solution': 'print(1)'}, body]}, path='/run/batch'
    )
    assert status == 422, (status, payload)


@pytest.mark.parametrize(
    'body', [{}, {'submissions': []}, {'submissions': None}, {'submissions': 'x'}, {'submissions': [{}]}]
)
def test_bad_batches_get_422(gateway_url: str, body: dict[str, Any]) -> None:
    for path in ('/run/batch', '/run/long-batch', '/judge/batch'):
        status, payload = run(gateway_url, body, path=path)
        assert status == 422, (path, status, payload)


def test_nul_bytes_and_binary_junk_are_judged_not_crashed(gateway_url: str) -> None:
    junk = bytes(random.Random(5).randrange(256) for _ in range(4096)).decode('latin-1')
    cases = [
        # (submission, check of the result)
        ({'type': 'python', 'solution': 'print(1)\x00'}, lambda r: not r['run_success'] and r['reason'] == ''),
        ({'type': 'python', 'solution': junk}, lambda r: not r['run_success'] and r['reason'] == ''),
        ({'type': 'cpp', 'solution': junk}, lambda r: r['verdict'] == 'compile_error' and r['reason'] == ''),
        ({'type': 'python', 'solution': COUNT_STDIN, 'input': 'a\x00b'}, lambda r: r['stdout'] == '3\n'),
        (
            {'type': 'python', 'solution': COUNT_STDIN, 'input': junk},
            lambda r: r['stdout'] == f'{len(junk.encode())}\n',
        ),
        ({'type': 'python', 'solution': 'print(1)', 'options': {'\x00': junk}}, lambda r: r['stdout'] == '1\n'),
        ({'type': 'python', 'solution': 'print(1)', 'expected_output': junk}, lambda r: r['verdict'] == 'wrong_answer'),
        ({'type': 'python', 'solution': 'print(1)', 'sub_id': junk}, lambda r: r['sub_id'] == junk and r['success']),
        ({'type': 'python', 'solution': 'print(1)', 'sub_id': 'x' * 100_000}, lambda r: r['success']),
        (  # output that is not UTF-8 comes back as text, not as an error
            {'type': 'python', 'solution': 'import sys\nsys.stdout.buffer.write(bytes(range(256)))'},
            lambda r: r['run_success'] and r['reason'] == '',
        ),
    ]
    status, payload = run(gateway_url, {'submissions': [c for c, _ in cases]}, path='/run/batch')
    assert status == 200, (status, payload)
    for (case, check), result in zip(cases, payload['results'], strict=True):
        assert result['reason'] != 'internal_error', (case, result)
        assert check(result), (case, result)


@pytest.mark.parametrize('field', ['solution', 'input', 'expected_output', 'sub_id'])
def test_lone_surrogates_get_422(gateway_url: str, field: str) -> None:
    """JSON may escape a lone surrogate (\\ud800); it is not encodable text: reject it up front."""
    body = {'type': 'python', 'solution': 'print(1)', field: 'a\ud800b'}
    raw = json.dumps(body).encode()  # ensure_ascii: the surrogate travels as the escape \ud800
    status, payload = run(gateway_url, raw=raw)
    assert status == 422, (status, payload)
    status, payload = run(gateway_url, raw=json.dumps({'submissions': [body]}).encode(), path='/run/long-batch')
    assert status == 422, (status, payload)


def test_empty_solutions(gateway_url: str) -> None:
    status, payload = run(
        gateway_url,
        {'submissions': [{'type': 'python', 'solution': ''}, {'type': 'cpp', 'solution': ''}]},
        path='/run/batch',
    )
    assert status == 200, payload
    py, cpp = payload['results']
    assert py['success'] and py['stdout'] == '' and py['verdict'] == 'accepted', py
    assert not cpp['success'] and cpp['verdict'] == 'compile_error' and cpp['reason'] == '', cpp


def test_large_but_allowed_solution_runs(gateway_url: str) -> None:
    code = 'print(1)\n#' + 'x' * (4 << 20)  # 4 MiB of comment
    status, payload = run(gateway_url, {'type': 'python', 'solution': code})
    assert status == 200 and payload['success'] and payload['stdout'] == '1\n', (status, str(payload)[:300])


def _post_big(url: str, path: str, body: bytes) -> tuple[int, Any]:
    """POST ``body``; a server that answers early and hangs up (413) is still heard."""
    import http.client

    host, port = url.split('//', 1)[1].split(':')
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.putrequest('POST', path)
    conn.putheader('Content-Type', 'application/json')
    conn.putheader('Content-Length', str(len(body)))
    conn.endheaders()
    try:
        for start in range(0, len(body), 1 << 20):
            conn.send(body[start : start + (1 << 20)])
    except (BrokenPipeError, ConnectionResetError):
        pass  # answered before the whole body was sent
    resp = conn.getresponse()
    raw = resp.read()
    conn.close()
    try:
        return resp.status, json.loads(raw)
    except ValueError:
        return resp.status, raw.decode(errors='replace')


def test_oversized_body_gets_413_or_a_correct_answer(gateway_url: str) -> None:
    """Above JUDGE_MAX_BODY_MB (default 64) the gateway refuses with 413 before parsing."""
    body = json.dumps({'type': 'python', 'solution': 'print(1)\n#' + 'x' * (65 << 20)}).encode()
    status, payload = _post_big(gateway_url, '/run', body)
    if status == 413:
        assert isinstance(payload, dict) and payload.get('detail'), payload
    else:  # no body limit configured: then it must simply work
        assert status == 200 and payload['stdout'] == '1\n', (status, str(payload)[:300])


def test_batch_over_the_size_limit_gets_413(gateway_url: str) -> None:
    n = 10_001  # JUDGE_MAX_BATCH_SIZE defaults to 10 000
    status, payload = run(gateway_url, {'submissions': [{'type': 'python', 'solution': ''}] * n}, path='/judge/batch')
    assert status in (413, 422), (status, str(payload)[:300])


def test_enormous_batch_is_answered_correctly_and_in_order(gateway_url: str) -> None:
    subs = [{'type': 'python', 'solution': f'print({i})', 'expected_output': str(i)} for i in range(BIG_BATCH)]
    status, payload = run(gateway_url, {'submissions': subs}, path='/judge/long-batch')
    assert status == 200, str(payload)[:300]
    results = payload['results']
    assert len(results) == BIG_BATCH
    wrong = [(i, r) for i, r in enumerate(results) if not (r['success'] and r['verdict'] == 'accepted')]
    assert not wrong, (len(wrong), wrong[:3])
