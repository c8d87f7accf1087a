"""The verl tools (`toolkit.verl`): shapes, metrics, infra flags, history replay, the shipped tool YAMLs, and the
installed verl when there is one (skipped unless installed: see the Makefile's test-verl)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import toolkit
from tests.support.toolkit_fakes import create, fake_gateway, run, text_of


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

            class AgentData:  # verl keeps one per trajectory, passed to every call
                request_id = 'traj-1'

            agent = AgentData()
            for code in ('x = 5', 'x * 2'):
                other = await create(tool)
                await tool.execute(other, {'code': code}, agent_data=agent)
                await tool.release(other)
            assert "['x = 5']" in gw.batches[-1][0]['solution']
            del agent  # the trajectory ends: its notebook goes with it
            assert 'traj-1' not in tool.notebooks.history
            await toolkit.close_shared()

    run(main())


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
