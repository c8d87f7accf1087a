"""An RLinf agent-loop worker for tests: RLinf's own ``Rstar2AgentLoopWorker`` tool-call code, no LLM.

``LoopProbe`` inherits every tool-call method of RLinf 0.3.0's rStar2 agent loop
(``tool_session_get``/``tool_call``/``tool_session_release``, ``post_process``,
``get_rollout_result`` and the base class's ``state_less_tool_call_with_channel``), through
``toolkit.rlinf.loop.JudgeRstar2AgentLoopWorker``, and runs them in a real Ray actor on RLinf
channels.  Only the constructor differs: it skips loading a tokenizer, which tool calls never use.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from rlinf.data.tool_call.tool_io_struct import ToolRequest
from rlinf.scheduler import Worker
from rlinf.workers.agent.agent_loop import AgentLoopOutput

from toolkit.rlinf.loop import JudgeRstar2AgentLoopWorker


class LoopProbe(JudgeRstar2AgentLoopWorker):  # type: ignore[misc]
    def __init__(self, cfg: Any) -> None:
        Worker.__init__(self)
        self.cfg = cfg
        self.max_tool_response_length = 100_000
        self.tool_response_truncate_side = 'right'
        self.print_outputs = self.return_logprobs = False
        self.max_prompt_len = int(cfg.data.max_prompt_length)

    def route(self, tool_name_map: dict[str, str]) -> None:
        """Which worker group serves each tool (``AgentRunner`` builds the same map)."""
        self.tool_name_map = dict(tool_name_map)

    async def trajectory(self, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[float, str]]:
        """One rStar2 trajectory: session start, the calls one after another, session end."""
        context = self.pre_process([])
        out = []
        for name, args in calls:
            start = time.monotonic()
            response = await self.tool_call(context, ToolRequest(name=name, arguments=args))
            out.append((time.monotonic() - start, response.text))
        for worker_name, session_id in context['tool_session_ids'].items():
            await self.tool_session_release(worker_name, session_id)
        return out

    async def trajectories(self, calls: list[list[tuple[str, dict[str, Any]]]]) -> list[list[tuple[float, str]]]:
        """Several trajectories at once, as an agent loop worker runs a GRPO group."""
        return list(await asyncio.gather(*(self.trajectory(c) for c in calls)))

    async def raw_calls(
        self, worker_name: str, calls: list[tuple[str, Any]], timeout_s: float = 30.0
    ) -> list[tuple[float, Any]]:
        """Concurrent stateless calls through RLinf's ``state_less_tool_call_with_channel``; raw replies
        (``None`` for a call that got no reply within ``timeout_s``: RLinf itself would wait forever)."""
        info = self.tool_channel_info_map[worker_name]

        async def one(name: str, args: Any) -> tuple[float, Any]:
            start = time.monotonic()
            call = self.state_less_tool_call_with_channel(
                info.input_channel, self.tool_worker_output_channel, name, args
            )
            try:
                reply = await asyncio.wait_for(call, timeout_s)
            except TimeoutError:
                reply = None
            return time.monotonic() - start, reply

        return list(await asyncio.gather(*(one(n, a) for n, a in calls)))

    async def reward(self, reward_type: str, reward_cfg: dict[str, Any], texts: list[str], refs: list[Any]) -> Any:
        """RLinf's reward registry lookup and ``get_reward``, as its reward worker does them."""
        from rlinf.algorithms.rewards import get_rule_based_reward_class

        reward = get_rule_based_reward_class(reward_type)(reward_cfg)
        return await asyncio.to_thread(reward.get_reward, texts, refs)

    async def masked_rollout(self, trajectories: list[list[tuple[str, dict[str, Any]]]]) -> tuple[list[Any], Any]:
        """Run each trajectory's calls, then RLinf's ``post_process`` and ``get_rollout_result``."""

        async def one(calls: list[tuple[str, dict[str, Any]]]) -> Any:
            context = self.pre_process([])
            for name, args in calls:
                await self.tool_call(context, ToolRequest(name=name, arguments=args))
            output = AgentLoopOutput(prompt_ids=[1, 2], response_ids=[3, 4, 5], response_mask=[1, 1, 1])
            return await self.post_process(context, output)

        outputs = list(await asyncio.gather(*(one(t) for t in trajectories)))
        result = self.get_rollout_result(outputs, 'answer')
        return [o.extra_fields for o in outputs], result.response_mask
