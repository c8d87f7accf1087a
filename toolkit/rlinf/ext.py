"""RLinf extension module: switch RLinf to the judge by configuration alone.

``export RLINF_EXT_MODULE=toolkit.rlinf.ext`` makes every RLinf worker process call
:func:`register`, which

* registers the reward class ``codejudge`` (:class:`toolkit.rlinf.reward.CodeJudgeReward`), so
  ``reward.reward_type: codejudge`` scores code answers on the judge;
* serves RLinf's stock ``HttpToolWorker`` (hard-coded in the rStar2 entry script) with
  :class:`JudgePythonTool`, i.e. :class:`toolkit.rlinf.JudgeToolHandler`: same tool name and config keys
  (``tools.codejudge.host_addr``/``host_port``/``concurrency_limit``), but calls are batched, every
  request is answered by its deadline (``tools.codejudge.deadline_s``) and replies carry
  ``meta_info``.  ``tools.codejudge.toolkit: false`` keeps the stock behaviour.

``register`` is idempotent (RLinf calls it once per worker it creates in a process).
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from toolkit.rlinf import codejudge_config, handler_from_config
from toolkit.schemas import PYTHON_SCHEMA, PYTHON_TOOL

__all__ = ['REWARD_NAME', 'JudgePythonTool', 'register']

logger = logging.getLogger('toolkit.rlinf.ext')

REWARD_NAME = 'codejudge'


def _register_reward() -> None:
    rewards: Any = importlib.import_module('rlinf.algorithms.rewards')
    if REWARD_NAME not in rewards.reward_registry:
        from toolkit.rlinf.reward import CodeJudgeReward

        rewards.register_reward(REWARD_NAME, CodeJudgeReward)


class JudgePythonTool:
    """RLinf rStar2 tool (``ToolBase`` shape) for ``python_code_with_standard_io``, served by the judge.

    Put in ``HttpToolWorker.TOOL_SET_CLS`` by :func:`register`: the stock worker builds it with its
    config, keeps its own session replies and ``concurrency_limit`` semaphore, and awaits
    ``execute(request, send_request_func)`` for each call.  Ray copies a worker class's methods onto
    the actor class it builds, so a tool class is the seam that reaches a stock worker.
    """

    name = PYTHON_TOOL

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg
        self._stock: Any = None
        if not codejudge_config(cfg).get('toolkit', True):  # opted out: RLinf's own tool
            self._stock = _STOCK_PYTHON_TOOL[0](cfg) if _STOCK_PYTHON_TOOL else None
        self.handler = handler_from_config(cfg)

    async def execute(self, request: Any, send_request_func: Any = None, **kwargs: Any) -> Any:
        """Reply to one ``execute`` request; never raises, answers by ``tools.codejudge.deadline_s``."""
        if self._stock is not None:
            return await self._stock.execute(request, send_request_func)
        return await self.handler.handle(request)

    def tool_schema(self) -> dict[str, Any]:
        """The tool's OpenAI function schema."""
        return PYTHON_SCHEMA

    def validate(self, request: Any) -> None:
        """Arguments are checked by ``execute``, which answers bad ones with ``invalid_input``."""
        return None


_STOCK_PYTHON_TOOL: list[Any] = []


def _reroute_http_tool_worker() -> None:
    module: Any = importlib.import_module('rlinf.agents.rstar2.http_tool_worker')
    tools: list[Any] = module.HttpToolWorker.TOOL_SET_CLS
    for i, tool in enumerate(tools):
        if tool is not JudgePythonTool and getattr(tool, 'name', None) == PYTHON_TOOL:
            _STOCK_PYTHON_TOOL[:] = [tool]
            tools[i] = JudgePythonTool  # in place: the actor class sees this list, not a copy


def register() -> None:
    """Install the judge reward and the ``HttpToolWorker`` reroute in this RLinf process."""
    for step in (_register_reward, _reroute_http_tool_worker):
        try:
            step()
        except ImportError as e:  # a partial rlinf install: keep what can be installed
            logger.warning('toolkit.rlinf.ext: %s skipped: %s', step.__name__, e)
