"""``JudgeRstar2AgentLoopWorker``: RLinf's rStar2 agent loop, with the judge's reliability flags kept.

RLinf 0.3.0's agent loop reads only ``str(response.result)`` from a tool reply, and its
``RolloutResult`` has no per-sample extra fields, so ``meta_info['infra_error']`` never reaches
training.  This subclass changes nothing in how tools are called; it watches the replies on the
tool output channel, counts per trajectory the calls the judge could not answer, puts the count in
``AgentLoopOutput.extra_fields['judge_infra_errors']`` and, unless
``agentloop.judge_mask_infra_errors`` is false, zeroes those trajectories' ``response_mask`` in the
``RolloutResult`` so they add no gradient (RLinf's ``masked_mean`` handles an all-zero mask).

Use it in place of ``Rstar2AgentLoopWorker`` in your entry script (imports rlinf, so torch).
"""

from __future__ import annotations

import collections
from typing import Any

from rlinf.agents.rstar2.rstar2_agent_loop import Rstar2AgentLoopWorker

__all__ = ['JudgeRstar2AgentLoopWorker']

INFRA_KEY = 'judge_infra_errors'


class _RecordingWork:
    """An RLinf async work whose result is shown to ``sink`` before the caller gets it."""

    def __init__(self, work: Any, key: Any, sink: Any) -> None:
        self._work, self._key, self._sink = work, key, sink

    async def async_wait(self) -> Any:
        reply = await self._work.async_wait()
        self._sink(self._key, reply)
        return reply

    def wait(self) -> Any:
        reply = self._work.wait()
        self._sink(self._key, reply)
        return reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self._work, name)


class _RecordingChannel:
    """Wraps RLinf's ``ToolOutput`` channel: ``get`` results are recorded, all else passes through."""

    def __init__(self, channel: Any, sink: Any) -> None:
        self._channel, self._sink = channel, sink

    def get(self, key: Any = None, async_op: bool = False) -> Any:
        work = self._channel.get(key, async_op=async_op) if key is not None else self._channel.get(async_op=async_op)
        if async_op:
            return _RecordingWork(work, key, self._sink)
        self._sink(key, work)
        return work

    def __getattr__(self, name: str) -> Any:
        return getattr(self._channel, name)


class JudgeRstar2AgentLoopWorker(Rstar2AgentLoopWorker):  # type: ignore[misc]
    """RLinf's ``Rstar2AgentLoopWorker`` that carries ``meta_info['infra_error']`` to training."""

    def init_worker(self, *args: Any, **kwargs: Any) -> Any:
        """As RLinf's, then wrap the tool output channel to watch replies."""
        out = super().init_worker(*args, **kwargs)
        self._judge_infra: collections.Counter[str] = collections.Counter()
        inner: Any = getattr(self, 'tool_worker_output_channel')  # noqa: B009 (set by RLinf's init_worker)
        self.tool_worker_output_channel = _RecordingChannel(inner, self._judge_record)
        return out

    def _judge_record(self, key: Any, reply: Any) -> None:
        meta = getattr(reply, 'meta_info', None)
        if isinstance(meta, dict) and meta.get('infra_error'):
            self._judge_infra[str(key)] += 1

    async def post_process(self, generate_context: dict[str, Any], output: Any) -> Any:
        """As RLinf's, plus ``extra_fields['judge_infra_errors']`` for this trajectory."""
        sessions = list(generate_context.get('tool_session_ids', {}).values())
        output = await super().post_process(generate_context, output)
        output.extra_fields[INFRA_KEY] = sum(self._judge_infra.pop(str(s), 0) for s in sessions)
        return output

    def get_rollout_result(self, task_results: list[Any], answer: Any) -> Any:
        """As RLinf's; trajectories with infrastructure failures get an all-zero ``response_mask``."""
        result = super().get_rollout_result(task_results, answer)
        if not self.cfg.agentloop.get('judge_mask_infra_errors', True) or result.response_mask is None:
            return result
        for i, task in enumerate(task_results):
            if task.extra_fields.get(INFRA_KEY):
                result.response_mask[i] = [0] * len(result.response_mask[i])
        return result
