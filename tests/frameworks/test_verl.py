"""The verl tools inside verl's own machinery (``make test-verl``: verl 0.9.1, and the oldest supported).

Tools are built by verl's ``initialize_tools_from_config`` from the shipped YAML (only the gateway
address changed) and called by verl 0.9.1's real ``ToolAgentLoop.run()``: its hermes parser, its
``_call_tool`` (create/execute/release), its truncation and its ``AgentData``.  The LLM is the only
stand-in: a scripted server answering with fixed token ids, through a byte-level tokenizer built
here (no model download).  The gateway is real (redis-server, Celery prefork worker, uvicorn).
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import json
import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

verl = pytest.importorskip('verl', reason='verl is not installed: run `make test-verl`')
yaml = pytest.importorskip('yaml')

import toolkit  # noqa: E402

pytestmark = pytest.mark.integration

CONFIGS = Path(toolkit.__file__).parent / 'verl' / 'configs'
NEW_LOOP = tuple(int(p) for p in verl.__version__.split('.')[:2]) >= (0, 9)
needs_loop = pytest.mark.skipif(not NEW_LOOP, reason='ToolAgentLoop tests target verl 0.9')


def test_the_pinned_verl_is_the_one_under_test() -> None:
    assert verl.__version__ == os.environ.get('VERL_EXPECT', verl.__version__)


def tool_yaml(tmp_path: Path, name: str, url: str, **config: Any) -> str:
    """The shipped YAML with the gateway address (and ``config``) changed, nothing else."""
    doc = yaml.safe_load((CONFIGS / name).read_text())
    parts = urlsplit(url)
    for entry in doc['tools']:
        entry['config'].update(host_addr=parts.hostname, host_port=str(parts.port), **config)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def load_tools(path: str) -> list[Any]:
    registry = 'verl.tools.tool_registry' if NEW_LOOP else 'verl.tools.utils.tool_registry'
    tools: list[Any] = importlib.import_module(registry).initialize_tools_from_config(path)
    return tools


def test_shipped_yaml_builds_verl_tools_that_answer(tmp_path: Path, gateway_url: str) -> None:
    from verl.tools import schemas
    from verl.tools.base_tool import BaseTool

    tools = load_tools(tool_yaml(tmp_path, 'python_tool_config.yaml', gateway_url))
    tools += load_tools(tool_yaml(tmp_path, 'jupyter_tool_config.yaml', gateway_url))
    assert [(type(t).__name__, t.name) for t in tools] == [
        ('PythonTool', 'python_code_with_standard_io'),
        ('JupyterTool', 'jupyter_code'),
    ]
    assert all(isinstance(t, BaseTool) and isinstance(t.tool_schema, schemas.OpenAIFunctionToolSchema) for t in tools)
    legacy = not hasattr(schemas, 'ToolResponse')  # verl 0.4/0.5: create -> str, execute -> (str, float, dict)

    async def main() -> None:
        created = await tools[0].create(create_kwargs={})
        iid = created if legacy else created[0]
        resp, reward, metrics = await tools[0].execute(iid, {'code': 'print(input()[::-1])', 'input': 'abc'})
        text = resp if legacy else resp.text
        assert text.startswith('Tool call success\nstdout: cba\n\nexecution time: ') and reward == 0.0
        assert metrics['infra_error'] is False
        await tools[0].release(iid)
        await toolkit.close_shared()

    asyncio.run(main())


# --- verl 0.9.1's ToolAgentLoop ----------------------------------------------------------------------

TEMPLATE = (
    '{%- if tools %}<|im_start|>system\nTools: {{ tools | tojson }}<|im_end|>\n{% endif %}'
    '{%- for m in messages %}<|im_start|>{{ m.role }}\n{% if m.content is string %}{{ m.content }}{% endif %}'
    '{%- if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}'
    '{% endif %}<|im_end|>\n{% endfor %}'
    '{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}'
)


def byte_tokenizer() -> Any:
    """A byte-level tokenizer with a ChatML-like template: exact round trips, built without downloads."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, chat_template=TEMPLATE, eos_token='<|im_end|>', pad_token='<|pad|>'
    )
    fast.add_special_tokens({'additional_special_tokens': ['<|im_start|>', '<tool_call>', '</tool_call>']})
    return fast


class ScriptedLLM:
    """Stands in for verl's LLM server: answers each ``generate`` with the next scripted text."""

    def __init__(self, tokenizer: Any, replies: list[str]) -> None:
        self.tokenizer, self.replies, self.prompts = tokenizer, list(replies), []

    async def generate(self, request_id: str, prompt_ids: list[int], sampling_params: dict[str, Any], **kw: Any) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        self.prompts.append(self.tokenizer.decode(prompt_ids))
        ids = self.tokenizer.encode(self.replies.pop(0), add_special_tokens=False)
        return TokenOutput(token_ids=[*ids, self.tokenizer.eos_token_id])


def call(name: str, **arguments: Any) -> str:
    return f'<tool_call>{json.dumps({"name": name, "arguments": arguments})}</tool_call>'


def run_loop(
    tools: list[Any], replies: list[str], max_parallel_calls: int = 2, settle_s: float = 0.0
) -> tuple[Any, list[str], float]:
    """One trajectory through verl's real ``ToolAgentLoop.run``; returns (output, tool messages, seconds).

    ``settle_s``: how long the loop still runs after the trajectory (what it scheduled at its end, such
    as closing its session, then gets done; verl's own loop runs on)."""
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop

    multi_turn = {
        'max_user_turns': 8,
        'max_assistant_turns': 8,
        'max_parallel_calls': max_parallel_calls,
        'max_tool_response_length': 256,
        'tool_response_truncate_side': 'middle',
        'format': 'hermes',
    }
    rollout = {'prompt_length': 8192, 'response_length': 8192, 'full_determinism': False, 'multi_turn': multi_turn}
    cfg = OmegaConf.create({'actor_rollout_ref': {'rollout': rollout}})
    tokenizer = byte_tokenizer()
    llm = ScriptedLLM(tokenizer, replies)

    async def main() -> Any:
        loop = ToolAgentLoop(
            DictConfigWrap(cfg),
            llm,
            tokenizer,
            None,
            None,
            DictConfigWrap(OmegaConf.create({})),
            tools=ToolListWrap(tools),
        )
        try:
            out = await loop.run({}, raw_prompt=[{'role': 'user', 'content': 'Compute.'}])
            gc.collect()
            await asyncio.sleep(settle_s)
            return out
        finally:
            await toolkit.close_shared()

    start = time.monotonic()
    out = asyncio.run(main())
    elapsed = time.monotonic() - start
    tool_msgs = [chunk.split('<|im_end|>')[0] for chunk in llm.prompts[-1].split('<|im_start|>tool\n')[1:]]
    return out, tool_msgs, elapsed


@needs_loop
def test_tool_calls_through_tool_agent_loop_return_rstar_text(tmp_path: Path, gateway_url: str) -> None:
    tools = load_tools(tool_yaml(tmp_path, 'python_tool_config.yaml', gateway_url))
    py = 'python_code_with_standard_io'
    replies = [
        'Two programs.' + call(py, code='print(input()[::-1])', input='abc') + call(py, code='1/0', input=''),
        'The answer is cba.',
    ]
    out, msgs, _ = run_loop(tools, replies)
    assert msgs[0].startswith('Tool call success\nstdout: cba\n\nexecution time: ')
    assert msgs[1].startswith('Tool call failure\nreason: \nstderr: ZeroDivisionError at line 1: division by zero')
    fields = out.extra_fields
    assert (fields['judge_tool_calls'], fields['judge_infra_errors'], fields['judge_infra_reasons']) == (2, 0, [])
    assert 0 in out.response_mask and 1 in out.response_mask  # verl masks the tool text out of the loss


@needs_loop
def test_infrastructure_failure_reaches_extra_fields_by_the_deadline(tmp_path: Path, dead_url: str) -> None:
    tools = load_tools(tool_yaml(tmp_path, 'python_tool_config.yaml', dead_url, deadline_s=3))
    out, msgs, elapsed = run_loop(tools, [call('python_code_with_standard_io', code='print(1)', input=''), 'Done.'])
    assert msgs[0].startswith('Tool call failure\nreason: ') and msgs[0].endswith('execution time: 0.00s')
    fields = out.extra_fields
    assert (fields['judge_tool_calls'], fields['judge_infra_errors']) == (1, 1)
    assert fields['judge_infra_reasons'] in (['internal_error'], ['queue_timeout'])
    assert elapsed < 3 + 1  # verl puts no timeout around execute: the tool's deadline bounds the call


@needs_loop
@pytest.mark.parametrize('mode', ['sessions', 'replay'])
def test_jupyter_yaml_keeps_state_within_a_trajectory(tmp_path: Path, gateway_url: str, mode: str) -> None:
    """verl makes a tool instance per call: the notebook is the trajectory's (``agent_data.request_id``),
    a live session closed when verl drops the trajectory's ``AgentData``, or replayed cells."""
    from tests.support.helpers import request

    tools = load_tools(tool_yaml(tmp_path, 'jupyter_tool_config.yaml', gateway_url, session_mode=mode))
    notebooks = tools[0].notebooks
    closed: list[str] = []
    close = notebooks.close

    async def recording_close(key: str) -> None:
        closed.append(notebooks.sessions.get(key, ''))
        await close(key)

    notebooks.close = recording_close
    nb = 'jupyter_code'
    replies = [call(nb, code='import math\nr = 2'), call(nb, code='round(math.pi * r * r, 3)'), 'About 12.566.']
    out, msgs, _ = run_loop(tools, replies, settle_s=1.0)
    assert msgs[1].startswith('Tool call success\nstdout: 12.566\n')
    assert (out.extra_fields['judge_tool_calls'], out.extra_fields['judge_infra_errors']) == (2, 0)
    assert notebooks.history == {} and notebooks.sessions == {}  # the trajectory ended: its notebook too
    if mode == 'sessions':
        assert len(closed) == 1 and closed[0], closed
        assert request(f'{gateway_url}/sessions/{closed[0]}')[0] == 404
