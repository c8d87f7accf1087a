"""Unit tests of the client toolkit: no redis, no Celery, no real gateway.

The batcher is exercised against a tiny aiohttp.web fake gateway on 127.0.0.1 that can inject
faults (5xx, 429 + Retry-After, infra results, 413, slow answers); the wrapper program is run with
the local interpreter in a subprocess.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import toolkit
from toolkit import (
    BatchPolicy,
    DeadlineExceeded,
    JudgeBusy,
    JudgeUnavailable,
    ProcessorClosed,
    RequestProcessor,
    RequestRejected,
    Result,
    RetryPolicy,
    Submission,
    SyncJudgeClient,
    is_retryable,
)
from toolkit.client import parse_retry_after
from toolkit.errors import BadResponse, RequestTimeout
from toolkit.policy import policy_from_config
from toolkit.wrapper import format_error_text, format_tool_text, wrap_code

# --- a fake gateway ---------------------------------------------------------------------------------

Action = Callable[[list[dict[str, Any]]], Any]


@dataclasses.dataclass
class FakeGateway:
    """Answers batch routes by echoing each solution as stdout; ``script`` overrides request by request."""

    url: str = ''
    script: list[Any] = dataclasses.field(default_factory=list)
    batches: list[list[dict[str, Any]]] = dataclasses.field(default_factory=list)
    times: list[float] = dataclasses.field(default_factory=list)
    delay_s: float = 0.0
    in_flight: int = 0
    max_in_flight: int = 0
    max_items: int | None = None

    @staticmethod
    def result(sub: dict[str, Any], reason: str = '') -> dict[str, Any]:
        stdout = sub['solution']
        expected = sub.get('expected_output')
        ok = reason == '' and (expected is None or expected.strip() == stdout.strip())
        return {
            'sub_id': 'x',
            'success': ok,
            'run_success': reason == '',
            'cost': 0.01,
            'stdout': stdout if reason == '' else None,
            'stderr': '' if reason == '' else None,
            'reason': reason,
        }

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        subs = body['submissions']
        self.batches.append(subs)
        self.times.append(time.monotonic())
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            action = self.script.pop(0) if self.script else 'ok'
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if self.max_items is not None and len(subs) > self.max_items:
                return web.Response(status=413, text='too large')
            if isinstance(action, tuple) and action[0] == 'status':
                headers = {'Retry-After': str(action[2])} if len(action) > 2 else {}
                return web.Response(status=action[1], text='fault', headers=headers)
            if isinstance(action, tuple) and action[0] == 'sleep':
                await asyncio.sleep(action[1])
            if action == 'queue_timeout':
                return web.json_response({'sub_id': 'b', 'results': [self.result(s, 'queue_timeout') for s in subs]})
            if action == 'short':
                return web.json_response({'sub_id': 'b', 'results': []})
            if callable(action):
                return web.json_response({'sub_id': 'b', 'results': action(subs)})
            return web.json_response({'sub_id': 'b', 'results': [self.result(s) for s in subs]})
        finally:
            self.in_flight -= 1


@asynccontextmanager
async def fake_gateway(**kwargs: Any) -> AsyncIterator[FakeGateway]:
    gw = FakeGateway(**kwargs)
    app = web.Application()
    for path in ('/run/long-batch', '/judge/long-batch', '/run/batch'):
        app.router.add_post(path, gw.handle)

    async def ping(request: web.Request) -> web.Response:
        return web.json_response('pong')

    app.router.add_get('/ping', ping)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, '127.0.0.1', 0)
    await site.start()
    port = runner.addresses[0][1]
    gw.url = f'http://127.0.0.1:{port}'
    try:
        yield gw
    finally:
        await runner.cleanup()


def fast_policy(**kw: Any) -> BatchPolicy:
    retry = RetryPolicy(backoff_base_s=0.01, backoff_max_s=0.05, **kw.pop('retry', {}))
    return BatchPolicy(
        fill_wait_ms=kw.pop('fill_wait_ms', 2.0), deadline_s=kw.pop('deadline_s', 10.0), retry=retry, **kw
    )


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# --- wrapper program ---------------------------------------------------------------------------------


def exec_wrapped(
    code: str, history: tuple[str, ...] = (), stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, '-c', wrap_code(code, history)], input=stdin, capture_output=True, text=True, timeout=30
    )


def test_wrapper_prints_last_expression_repr() -> None:
    p = exec_wrapped("x = 20\n'a' * 2 if x else None")
    assert (p.returncode, p.stdout, p.stderr) == (0, "'aa'\n", '')
    p = exec_wrapped('x = 1\nNone')
    assert (p.returncode, p.stdout) == (0, '')


def test_wrapper_error_format_uses_user_line_numbers_and_keeps_stdout() -> None:
    p = exec_wrapped('print("before")\ny = 2\nprint(undefined_name)')
    assert p.returncode == 1
    assert p.stdout == 'before\n'
    assert p.stderr == "NameError at line 3: name 'undefined_name' is not defined\n  print(undefined_name)\n"


def test_wrapper_error_line_is_innermost_user_frame() -> None:
    p = exec_wrapped('def f(n):\n    return 10 // n\n\nf(0)')
    assert p.stderr.startswith('ZeroDivisionError at line 2: integer division or modulo by zero\n  return 10 // n')


def test_wrapper_syntax_error() -> None:
    p = exec_wrapped('x = 1\nfor for\n')
    assert p.returncode == 1
    assert p.stderr.startswith('SyntaxError at line 2: invalid syntax\n  for for')


def test_wrapper_history_replay_is_silent_and_keeps_state() -> None:
    p = exec_wrapped('print(total + 1)', history=('total = 41\nprint("hidden")', '1/0'))
    assert (p.returncode, p.stdout, p.stderr) == (0, '42\n', '')


def test_wrapper_stdin_exit_code_and_pickle() -> None:
    assert exec_wrapped('print(input()[::-1])', stdin='abc\n').stdout == 'cba\n'
    assert exec_wrapped('import sys\nprint("x")\nsys.exit(3)').returncode == 3
    p = exec_wrapped('import pickle\ndef g(): return 5\npickle.loads(pickle.dumps(g))()')
    assert (p.returncode, p.stdout) == (0, '5\n')


def test_wrapper_program_is_small_and_escapes_code() -> None:
    code = 'print("""\'quotes\' \\\\ and ünïcode""")'
    assert len(wrap_code('print(1)')) < 3000
    assert exec_wrapped(code).stdout == "'quotes' \\ and ünïcode\n"


# --- tool text ---------------------------------------------------------------------------------------


def make_result(**kw: Any) -> Result:
    base: dict[str, Any] = {'sub_id': 's', 'success': True, 'run_success': True, 'cost': 0.0, 'reason': ''}
    return Result(**(base | kw))


def test_tool_text_success_matches_rstar() -> None:
    text = format_tool_text(make_result(stdout='45\n', stderr='', cost=0.0123))
    assert text == 'Tool call success\nstdout: 45\n\nexecution time: 0.01s'


def test_tool_text_failure_matches_rstar() -> None:
    err = "NameError at line 1: name 'undefined_name' is not defined\n  print(undefined_name)\n"
    res = make_result(success=False, run_success=False, stdout='', stderr=err, cost=0.06)
    assert format_tool_text(res) == f'Tool call failure\nreason: \nstderr: {err}\nexecution time: 0.06s'
    res = make_result(success=False, run_success=False, reason='worker_timeout', stdout='Suicide from timeout.', cost=4)
    assert format_tool_text(res).splitlines() == [
        'Tool call failure',
        'reason: worker_timeout',
        'stdout: Suicide from timeout.',
        'execution time: 4.00s',
    ]


def test_error_text_for_missing_results() -> None:
    assert (
        format_error_text(DeadlineExceeded('late')) == 'Tool call failure\nreason: queue_timeout\nexecution time: 0.00s'
    )
    assert 'reason: internal_error' in format_error_text(JudgeUnavailable('down'))


# --- classification, backoff, parsing ----------------------------------------------------------------


@pytest.mark.parametrize(
    ('outcome', 'retry'),
    [
        (make_result(reason='queue_timeout', success=False, run_success=False), True),
        (make_result(reason='internal_error', success=False, run_success=False), True),
        (make_result(reason='worker_timeout', success=False, run_success=False), False),
        (make_result(reason='', success=False, run_success=True), False),
        (JudgeUnavailable('x'), True),
        (JudgeBusy('x', status=429, retry_after_s=1), True),
        (RequestTimeout('x'), True),
        (BadResponse('x'), True),
        (RequestRejected('x', status=422), False),
        (DeadlineExceeded('x'), False),
        (ProcessorClosed('x'), False),
        (ValueError('x'), False),
    ],
)
def test_retry_classification(outcome: Any, retry: bool) -> None:
    assert is_retryable(outcome) is retry


def test_backoff_is_jittered_exponential_and_capped() -> None:
    policy = RetryPolicy(backoff_base_s=0.1, backoff_max_s=1.0)
    rng = random.Random(7)
    for attempt, cap in [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.8), (5, 1.0), (9, 1.0)]:
        delays = [policy.backoff_s(attempt, rng) for _ in range(50)]
        assert all(cap / 2 <= d <= cap for d in delays)
        assert len({round(d, 6) for d in delays}) > 10  # jittered, not constant
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


def test_parse_retry_after() -> None:
    assert parse_retry_after('3') == 3.0
    assert parse_retry_after(' 0.5 ') == 0.5
    assert parse_retry_after(None) is None and parse_retry_after('soon') is None
    assert parse_retry_after('Wed, 21 Oct 2015 07:28:10 GMT', now_s=1445412480.0) == pytest.approx(10.0)


def test_result_from_json_validates() -> None:
    res = Result.from_json({'sub_id': 'a', 'success': True, 'run_success': True, 'cost': 1, 'stdout': 'x'})
    assert (res.ok, res.infra, res.cost, res.stdout, res.stderr) == (True, False, 1.0, 'x', None)
    for bad in ([], {'success': True}, {'success': 1, 'run_success': True, 'cost': 0}):
        with pytest.raises(BadResponse):
            Result.from_json(bad)


def test_policy_from_rstar_config() -> None:
    base_url, policy = policy_from_config(
        {
            'type': 'native',
            'host_addr': 'judge.local',
            'host_port': '8088',
            'request_processor_batch_size': 32,
            'request_processor_concurrency': 8,
            'request_processor_batch_timeout_seconds': 30,
        }
    )
    assert base_url == 'http://judge.local:8088'
    assert (policy.max_batch_size, policy.max_batches_in_flight, policy.fill_wait_ms) == (32, 8, 5.0)
    assert policy_from_config({'base_url': 'http://x:1', 'fill_wait_ms': 50})[1].fill_wait_ms == 50


def test_toolkit_never_imports_judge_or_api() -> None:
    import ast

    for path in Path(toolkit.__file__).parent.rglob('*.py'):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not [n for n in names if n.split('.')[0] in ('judge', 'api', 'torch')], (path, names)


def test_import_toolkit_is_light() -> None:
    code = (
        'import importlib.util, sys, toolkit, toolkit.rlinf, toolkit.rlinf.ext, toolkit.rlinf.reward, toolkit.reward\n'
        'import toolkit.evaluate.cli, toolkit.schemas\n'
        'heavy = lambda: [m for m in ("judge", "api", "torch", "verl", "rlinf", "ray") if m in sys.modules]\n'
        'print(heavy())\n'
        'import toolkit.verl.tools\n'  # imports verl (and so torch) only when verl is installed
        'print(heavy() == (["torch", "verl", "ray"] if importlib.util.find_spec("verl") else []))'
    )
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ['[]', 'True']


# --- batcher -----------------------------------------------------------------------------------------


def test_batches_fill_up_and_answers_match_callers() -> None:
    async def main() -> None:
        async with fake_gateway() as gw, RequestProcessor(gw.url, fast_policy(max_batch_size=32)) as proc:
            results = await asyncio.gather(*(proc.submit(Submission(f'code-{i}')) for i in range(100)))
            assert [r.stdout for r in results] == [f'code-{i}' for i in range(100)]
            assert sorted(len(b) for b in gw.batches) == [4, 32, 32, 32]
            assert all(r.attempts == 1 and r.batch_size in (4, 32) for r in results)
            stats = proc.stats()
            assert (stats['submitted'], stats['answered'], stats['batches'], stats['retries']) == (100, 100, 4, 0)

    run(main())


def test_fill_wait_groups_items_arriving_close_together() -> None:
    async def trickle(fill_wait_ms: float) -> list[int]:
        async with fake_gateway() as gw, RequestProcessor(gw.url, fast_policy(fill_wait_ms=fill_wait_ms)) as proc:

            async def later(i: int) -> Result:
                await asyncio.sleep(0.05 * i)
                return await proc.submit(Submission(str(i)))

            await asyncio.gather(*(later(i) for i in range(3)))
            return [len(b) for b in gw.batches]

    assert run(trickle(300.0)) == [3]
    assert run(trickle(0.0)) == [1, 1, 1]


def test_batches_in_flight_are_capped() -> None:
    async def main() -> None:
        policy = fast_policy(max_batch_size=2, max_batches_in_flight=3)
        async with fake_gateway(delay_s=0.1) as gw, RequestProcessor(gw.url, policy) as proc:
            results = await proc.submit_many([Submission(str(i)) for i in range(20)])
            assert all(isinstance(r, Result) and r.ok for r in results)
            assert gw.max_in_flight == 3
            assert len(gw.batches) == 10

    run(main())


def test_no_pause_after_successful_batch() -> None:
    async def main() -> float:
        async with fake_gateway() as gw, RequestProcessor(gw.url, fast_policy(fill_wait_ms=0)) as proc:
            start = time.monotonic()
            for i in range(20):
                assert (await proc.submit(Submission(str(i)))).ok
            return time.monotonic() - start

    assert run(main()) < 2.0  # rStar's client would need >= 20 x 0.5 s


def test_only_infra_failures_are_retried() -> None:
    def mixed(subs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        reasons = {'infra': 'queue_timeout', 'slow': 'worker_timeout'}
        return [FakeGateway.result(s, reasons.get(s['solution'], '')) for s in subs]

    async def main() -> None:
        async with fake_gateway(script=[mixed]) as gw, RequestProcessor(gw.url, fast_policy()) as proc:
            infra, slow, fine = await asyncio.gather(*(proc.submit(Submission(c)) for c in ('infra', 'slow', 'fine')))
            assert (infra.ok, infra.attempts) == (True, 2)
            assert (slow.reason, slow.attempts) == ('worker_timeout', 1)
            assert (fine.ok, fine.attempts) == (True, 1)
            assert [[s['solution'] for s in b] for b in gw.batches] == [['infra', 'slow', 'fine'], ['infra']]

    run(main())


def test_5xx_and_429_are_retried_honouring_retry_after() -> None:
    async def main() -> None:
        script = [('status', 503), ('status', 429, 0.3)]
        async with fake_gateway(script=script) as gw, RequestProcessor(gw.url, fast_policy()) as proc:
            res = await proc.submit(Submission('x'))
            assert (res.ok, res.attempts) == (True, 3)
            assert gw.times[2] - gw.times[1] >= 0.28
            assert proc.stats()['batch_errors'] == 2

    run(main())


def test_rejected_requests_are_not_retried() -> None:
    async def main() -> None:
        async with fake_gateway(script=[('status', 422)]) as gw, RequestProcessor(gw.url, fast_policy()) as proc:
            with pytest.raises(RequestRejected) as info:
                await proc.submit(Submission('x'))
            assert (info.value.status, info.value.attempts, len(gw.batches)) == (422, 1, 1)

    run(main())


def test_too_large_batches_are_split() -> None:
    async def main() -> None:
        async with fake_gateway(max_items=4) as gw, RequestProcessor(gw.url, fast_policy(max_batch_size=16)) as proc:
            results = await asyncio.gather(*(proc.submit(Submission(str(i))) for i in range(16)))
            assert [r.stdout for r in results] == [str(i) for i in range(16)]
            assert proc.stats()['batch_splits'] == 3 and max(len(b) for b in gw.batches) == 16

    run(main())


def test_retries_give_up_with_last_infra_result() -> None:
    async def main() -> None:
        script = ['queue_timeout'] * 10
        async with fake_gateway(script=script) as gw, RequestProcessor(gw.url, fast_policy()) as proc:
            res = await proc.submit(Submission('x'))
            assert (res.reason, res.infra, res.attempts, len(gw.batches)) == ('queue_timeout', True, 4, 4)

    run(main())


def test_retry_budget_limits_retry_storms() -> None:
    async def main() -> None:
        policy = fast_policy(max_batch_size=1, retry={'budget_ratio': 0.0, 'budget_min_tokens': 2})
        async with fake_gateway(script=[('status', 500)] * 100) as gw, RequestProcessor(gw.url, policy) as proc:
            outs = await proc.submit_many([Submission(str(i)) for i in range(10)])
            assert all(isinstance(o, JudgeUnavailable) for o in outs)
            stats = proc.stats()
            assert (stats['retries'], len(gw.batches)) == (2, 12)
            assert stats['retries_denied'] == 10  # 8 first failures, then the 2 retried ones again

    run(main())


def test_deadline_always_answers() -> None:
    async def main() -> None:
        async with fake_gateway(delay_s=5.0) as gw, RequestProcessor(gw.url, fast_policy()) as proc:
            start = time.monotonic()
            with pytest.raises(DeadlineExceeded):
                await proc.submit(Submission('x'), deadline_s=0.3)
            assert 0.25 < time.monotonic() - start < 1.5
            assert proc.stats()['deadline_exceeded'] == 1

    run(main())


def test_unreachable_gateway_gives_clear_error_before_deadline() -> None:
    async def main() -> None:
        async with fake_gateway() as gw:
            url = gw.url  # the port is closed once the server stops
        async with RequestProcessor(url, fast_policy()) as proc:
            start = time.monotonic()
            with pytest.raises(JudgeUnavailable) as info:
                await proc.submit(Submission('x'), deadline_s=5.0)
            assert info.value.attempts == 4 and time.monotonic() - start < 3.0

    run(main())


def test_bad_response_length_is_an_error_not_a_hang() -> None:
    async def main() -> None:
        policy = fast_policy(retry={'max_attempts': 1})
        async with fake_gateway(script=['short']) as gw, RequestProcessor(gw.url, policy) as proc:
            outs = await proc.submit_many([Submission('a'), Submission('b')])
            assert all(isinstance(o, BadResponse) for o in outs)

    run(main())


def test_close_drains_then_fails_leftovers() -> None:
    async def main() -> None:
        async with fake_gateway(delay_s=0.1) as gw:
            proc = RequestProcessor(gw.url, fast_policy())
            task = asyncio.ensure_future(proc.submit(Submission('a')))
            await asyncio.sleep(0.01)
            await proc.close(drain_timeout_s=2.0)
            assert (await task).ok
            with pytest.raises(ProcessorClosed):
                await proc.submit(Submission('b'))
        async with fake_gateway(delay_s=5.0) as gw:
            proc = RequestProcessor(gw.url, fast_policy())
            task = asyncio.ensure_future(proc.submit(Submission('a')))
            await asyncio.sleep(0.05)
            await proc.close(drain_timeout_s=0.1)
            with pytest.raises(ProcessorClosed):
                await task

    run(main())


def test_cancelled_caller_is_removed_from_queue() -> None:
    async def main() -> None:
        policy = fast_policy(max_batch_size=1, max_batches_in_flight=1)
        async with fake_gateway(delay_s=0.2) as gw, RequestProcessor(gw.url, policy) as proc:
            first = asyncio.ensure_future(proc.submit(Submission('first')))
            second = asyncio.ensure_future(proc.submit(Submission('second')))
            await asyncio.sleep(0.05)
            second.cancel()
            assert (await first).ok
            await asyncio.sleep(0.3)
            assert [[s['solution'] for s in b] for b in gw.batches] == [['first']]
            assert proc.stats()['cancelled'] == 1 and proc.stats()['pending'] == 0

    run(main())


def test_get_shared_is_per_loop_url_and_policy() -> None:
    async def main() -> tuple[RequestProcessor, RequestProcessor]:
        a = toolkit.get_shared('http://127.0.0.1:9')
        assert toolkit.get_shared('http://127.0.0.1:9/') is a
        assert toolkit.get_shared('http://127.0.0.1:9', BatchPolicy(max_batch_size=3)) is not a
        await toolkit.close_shared()
        b = toolkit.get_shared('http://127.0.0.1:9')
        assert b is not a and a.closed
        await toolkit.close_shared()
        return a, b

    a1, _ = run(main())
    a2, _ = run(main())
    assert a1 is not a2  # a new event loop gets its own processor


# --- tools, sync client, reward, rlinf ------------------------------------------------------------------


async def create(tool: Any, **kwargs: Any) -> str:
    """``tool.create`` for any verl shape: ``(id, response)`` (>= 0.6, or no verl) or ``id`` (0.4/0.5)."""
    created = await tool.create(**kwargs)
    if isinstance(created, str):
        return created
    iid, empty = created
    assert empty.text is None
    return str(iid)


def text_of(response: Any) -> str:
    """Text of a tool response: ``ToolResponse``/``TextResponse`` or a plain string (verl 0.4/0.5)."""
    return response if isinstance(response, str) else str(response.text)


def test_python_tool_shapes_and_metrics() -> None:
    async def main() -> None:
        async with fake_gateway() as gw:
            tool = toolkit.PythonTool({'base_url': gw.url, 'fill_wait_ms': 1})
            assert tool.name == 'python_code_with_standard_io'
            iid = await create(tool)
            resp, reward, metrics = await tool.execute(iid, {'code': 'print(1)', 'input': '7'})
            assert text_of(resp).startswith('Tool call success\nstdout: ') and reward == 0.0
            assert metrics['infra_error'] is False and metrics['attempts'] == 1
            assert gw.batches[0][0]['input'] == '7' and "'print(1)'" in gw.batches[0][0]['solution']
            resp, _, metrics = await tool.execute(iid, {'input': ''})
            assert metrics['invalid_call'] and 'invalid_input' in text_of(resp)
            assert await tool.calc_reward(iid) == 0.0
            await tool.release(iid)
            await toolkit.close_shared()

    run(main())


def test_python_tool_flags_infra_errors() -> None:
    async def main() -> None:
        async with fake_gateway(script=['queue_timeout'] * 20) as gw:
            tool = toolkit.PythonTool({'base_url': gw.url, 'max_attempts': 2})
            iid = await create(tool)
            resp, _, metrics = await tool.execute(iid, {'code': 'x', 'input': ''})
            assert text_of(resp).startswith('Tool call failure\nreason: queue_timeout')
            assert metrics['infra_error'] is True and metrics['attempts'] == 2
        tool = toolkit.PythonTool({'base_url': gw.url, 'max_attempts': 1})
        resp, _, metrics = await tool.execute('i', {'code': 'x', 'input': ''})
        assert metrics['infra_error'] is True and 'error' in metrics
        await toolkit.close_shared()

    run(main())


def test_jupyter_tool_replays_history() -> None:
    async def main() -> None:
        async with fake_gateway() as gw:
            tool = toolkit.JupyterTool({'base_url': gw.url})
            assert tool.name == 'jupyter_code'
            calls = [{'name': 'jupyter_code', 'arguments': json.dumps({'code': 'a = 1'})}, {'name': 'other'}]
            iid = await create(tool, history_tool_calls=calls)
            await tool.execute(iid, {'code': 'b = a + 1'})
            await tool.execute(iid, {'code': 'print(b)'})
            last = gw.batches[-1][0]['solution']
            assert "['a = 1', 'b = a + 1']" in last and "'print(b)'" in last

            class AgentData:
                request_id = 'traj-1'

            for code in ('x = 5', 'x * 2'):
                other = await create(tool)
                await tool.execute(other, {'code': code}, agent_data=AgentData())
                await tool.release(other)
            assert "['x = 5']" in gw.batches[-1][0]['solution']
            await toolkit.close_shared()

    run(main())


def test_sync_client_is_thread_safe() -> None:
    ready = threading.Event()
    box: dict[str, Any] = {}

    def serve() -> None:
        async def main() -> None:
            async with fake_gateway() as gw:
                box['url'] = gw.url
                ready.set()
                while 'stop' not in box:
                    await asyncio.sleep(0.02)

        asyncio.run(main())

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    assert ready.wait(10)
    try:
        with SyncJudgeClient(box['url'], fast_policy()) as client:
            outs: dict[int, Result] = {}

            def worker(i: int) -> None:
                outs[i] = client.run(f'print({i})')

            threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(20)
            assert [outs[i].stdout for i in range(16)] == [f'print({i})' for i in range(16)]
            assert client.judge('42', expected_output='42\n').success
            assert client.ping()
            assert client.stats()['/run/long-batch']['answered'] == 16
        with pytest.raises(ProcessorClosed):
            client.run('x')
        client.close()  # idempotent
    finally:
        box['stop'] = True
        server.join(5)


def test_reward_pass_rates() -> None:
    from toolkit.reward import PassRate, TestCase, pass_rates

    async def main() -> None:
        async with fake_gateway() as gw:
            pairs = [('A', [TestCase(None, 'A'), TestCase('in', 'B')]), ('B', [(None, 'B')]), ('C', [])]
            rates = await pass_rates(pairs, base_url=gw.url)
            assert rates == [PassRate(1, 2), PassRate(1, 1), PassRate(0, 0)]
            assert [r.rate for r in rates] == [0.5, 1.0, 0.0]
            assert all(len(b) == 3 for b in gw.batches) and len(gw.batches) == 1
        async with fake_gateway(script=['queue_timeout'] * 20) as gw:
            proc = RequestProcessor(gw.url, fast_policy(route='/judge/long-batch', retry={'max_attempts': 1}))
            [rate] = await pass_rates([('A', [(None, 'A')])], processor=proc)
            assert (rate.rate, rate.reliable) == (0.0, False)
            await proc.close()

    run(main())


def test_rlinf_handler_always_replies() -> None:
    from toolkit.rlinf import JudgeToolHandler, ToolChannelRequest

    async def main() -> None:
        async with fake_gateway() as gw:
            handler = JudgeToolHandler(gw.url, fast_policy(deadline_s=0.5))
            start = ToolChannelRequest(session_id='s1', request_type='session_start')
            assert (await handler.handle(start)).success
            req = ToolChannelRequest('s1', 'execute', 'jupyter_code', {'code': 'v = 3'})
            reply = await handler.handle(req)
            assert reply.success and reply.result.startswith('Tool call success') and not reply.meta_info['infra_error']
            req = ToolChannelRequest('s1', 'execute', 'jupyter_code', {'code': 'v'})
            await handler.handle(req)
            assert "['v = 3']" in gw.batches[-1][0]['solution']
            bad = await handler.handle(ToolChannelRequest('s1', 'execute', 'nope', {'code': 'x'}))
            assert not bad.success and not bad.meta_info['infra_error']
            inbox: asyncio.Queue[Any] = asyncio.Queue()
            outbox: asyncio.Queue[Any] = asyncio.Queue()
            server = asyncio.ensure_future(handler.serve(inbox, outbox))
            gw.delay_s = 3.0
            await inbox.put(ToolChannelRequest('s2', 'execute', 'python_code_with_standard_io', {'code': 'x'}))
            key, reply = await asyncio.wait_for(outbox.get(), 3.0)
            assert key == 's2' and not reply.success and reply.meta_info['infra_error']
            server.cancel()
            await toolkit.close_shared(drain_timeout_s=0)

    run(main())


def test_rlinf_success_means_the_program_ran_and_bad_calls_are_answered() -> None:
    from toolkit.rlinf import JudgeToolHandler, ToolChannelRequest

    def script(subs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [FakeGateway.result(s, '' if 'ok' in s['solution'] else 'worker_timeout') for s in subs]

    async def main() -> None:
        async with fake_gateway(script=[script, script]) as gw:
            handler = JudgeToolHandler(gw.url, fast_policy(), concurrency_limit=1)
            assert [s['function']['name'] for s in handler.tool_schemas()] == list(handler.tool_names)
            good, limit = await asyncio.gather(
                handler.handle(ToolChannelRequest('s', 'execute', 'python_code_with_standard_io', {'code': 'ok'})),
                handler.handle(ToolChannelRequest('s', 'execute', 'python_code_with_standard_io', {'code': 'x'})),
            )
            assert good.success and not limit.success and not limit.meta_info['infra_error']
            assert max(len(b) for b in gw.batches) == 1  # concurrency_limit=1: one call in flight
            for args in ({'code': 1}, None, {'code': 'ok', 'input': 2}):
                bad = await handler.handle(ToolChannelRequest('s', 'execute', 'python_code_with_standard_io', args))
                assert not bad.success and bad.meta_info['reason'] == 'invalid_input'
            odd = await handler.handle(ToolChannelRequest('s', 'restart'))
            assert not odd.success and odd.meta_info['reason'] == 'invalid_input'
            await toolkit.close_shared()

    run(main())


def test_rlinf_reward_helpers() -> None:
    from toolkit.reward import TestCase
    from toolkit.rlinf.reward import extract_code, parse_tests

    assert extract_code('a\n```python\nprint(1)\n```\nb\n```py\nprint(2)\n```') == 'print(2)\n'
    assert extract_code('print(3)') == 'print(3)'
    tests = [TestCase('1', '2'), TestCase('3', '4')]
    assert parse_tests(['{"inputs": ["1", "3"], "outputs": ["2", "4"]}']) == tests
    assert parse_tests('[{"input": "1", "output": "2"}, {"input": "3", "output": "4"}]') == tests
    assert parse_tests('not json') == [] and parse_tests(None) == []


def test_shipped_rlinf_yaml_configures_handler_and_reward() -> None:
    yaml = pytest.importorskip('yaml')
    from toolkit.rlinf import handler_from_config
    from toolkit.rlinf.reward import CodeJudgeReward

    doc = yaml.safe_load((Path(toolkit.__file__).parent / 'rlinf' / 'configs' / 'rlinf_codejudge.yaml').read_text())
    handler = handler_from_config(doc)
    assert (handler.base_url, handler.concurrency_limit, handler.policy.deadline_s) == (
        'http://127.0.0.1:8088',
        128,
        60,
    )
    assert (handler.policy.max_batch_size, handler.policy.max_batches_in_flight) == (32, 8)
    reward = CodeJudgeReward(doc['reward'])
    assert (reward.base_url, reward.deadline_s, reward.all_or_nothing) == ('http://127.0.0.1:8088', 120, False)
    reward.close()


def test_tools_count_calls_into_agent_data_extra_fields() -> None:
    class AgentData:
        request_id = 'r1'

        def __init__(self) -> None:
            self.extra_fields: dict[str, Any] = {}

    async def main() -> None:
        data = AgentData()
        async with fake_gateway(script=['ok', 'queue_timeout']) as gw:
            tool = toolkit.PythonTool({'base_url': gw.url, 'max_attempts': 1})
            await tool.execute('i', {'code': 'print(1)', 'input': ''}, agent_data=data)
            await tool.execute('i', {'code': 'print(1)', 'input': ''}, agent_data=data)
            await tool.execute('i', {'input': ''}, agent_data=data)
            await tool.execute('i', {'code': 'print(1)', 'input': ''}, agent_data=None)  # rStar passes none
            await toolkit.close_shared()
        assert data.extra_fields == {
            'judge_tool_calls': 3,
            'judge_infra_errors': 1,
            'judge_infra_reasons': ['queue_timeout'],
        }

    run(main())


# --- configs and the real verl package (skipped unless installed: see the Makefile's test-verl) -------

CONFIGS = Path(toolkit.__file__).parent / 'verl' / 'configs'


def _load_tool_classes(path: Path) -> list[tuple[Any, dict[str, Any]]]:
    yaml = pytest.importorskip('yaml')
    import importlib

    out = []
    for entry in yaml.safe_load(path.read_text())['tools']:
        module, name = entry['class_name'].rsplit('.', 1)
        out.append((getattr(importlib.import_module(module), name), entry))
    return out


@pytest.mark.parametrize('name', ['python_tool_config.yaml', 'jupyter_tool_config.yaml'])
def test_shipped_tool_yaml_builds_our_tools(name: str) -> None:
    [(cls, entry)] = _load_tool_classes(CONFIGS / name)
    tool = cls(entry['config'], None)
    assert tool.name == entry['tool_schema']['function']['name']
    assert (tool.policy.max_batch_size, tool.policy.max_batches_in_flight) == (32, 8)
    assert tool.base_url == 'http://127.0.0.1:8088'


def test_verl_tool_contract() -> None:
    """Against the installed verl: >= 0.6 (ToolResponse) or 0.4/0.5 (plain strings)."""
    pytest.importorskip('verl.tools.base_tool')
    from verl.tools import schemas
    from verl.tools.base_tool import BaseTool

    try:
        from verl.tools.tool_registry import initialize_tools_from_config
    except ImportError:
        from verl.tools.utils.tool_registry import initialize_tools_from_config

    legacy = not hasattr(schemas, 'ToolResponse')
    tools = initialize_tools_from_config(str(CONFIGS / 'python_tool_config.yaml'))
    tools += initialize_tools_from_config(str(CONFIGS / 'jupyter_tool_config.yaml'))
    assert [type(t).__name__ for t in tools] == ['PythonTool', 'JupyterTool']
    assert all(isinstance(t, BaseTool) and isinstance(t.tool_schema, schemas.OpenAIFunctionToolSchema) for t in tools)
    assert isinstance(toolkit.PythonTool({}).tool_schema, schemas.OpenAIFunctionToolSchema)  # default schema

    async def main() -> None:
        async with fake_gateway() as gw:
            tool = toolkit.PythonTool({'base_url': gw.url, 'type': 'native'})
            created = await tool.create(create_kwargs={})
            if legacy:
                iid = created
            else:
                iid, empty = created
                assert isinstance(empty, schemas.ToolResponse)
            resp, reward, metrics = await tool.execute(iid, {'code': 'print(1)', 'input': ''}, agent_data=None)
            text = resp if legacy else resp.text
            assert isinstance(iid, str) and isinstance(text, str) and text.startswith('Tool call success')
            assert isinstance(reward, float) and metrics['infra_error'] is False
            await tool.release(iid)
            await toolkit.close_shared()

    run(main())


def test_legacy_verl_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    """verl 0.4/0.5: create -> str, execute -> (str, float, dict)."""
    import toolkit.verl.compat
    import toolkit.verl.tools

    monkeypatch.setattr(toolkit.verl.compat, 'LEGACY_VERL', True)
    monkeypatch.setattr(toolkit.verl.tools, 'LEGACY_VERL', True)

    async def main() -> None:
        async with fake_gateway() as gw:
            tool = toolkit.PythonTool({'base_url': gw.url})
            iid = await tool.create()
            assert isinstance(iid, str)
            text, reward, metrics = await tool.execute(iid, {'code': 'print(1)', 'input': ''})
            assert isinstance(text, str) and text.startswith('Tool call success') and metrics['infra_error'] is False
            await toolkit.close_shared()

    run(main())
