"""The RLinf adapter (`toolkit.rlinf`): the tool handler always replies, reward helpers, the shipped YAML."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import toolkit
from tests.support.toolkit_fakes import FakeGateway, fake_gateway, fast_policy, run


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
    from toolkit.rewards.passrate import TestCase
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
