"""RLinf extension module: switch RLinf to the judge by configuration alone.

``export RLINF_EXT_MODULE=toolkit.rlinf_ext`` makes every RLinf worker process call
:func:`register`, which

* registers the reward class ``codejudge`` (:class:`toolkit.rlinf_reward.CodeJudgeReward`), so
  ``reward.reward_type: codejudge`` scores code answers on the judge;
* reroutes RLinf's stock ``HttpToolWorker`` (hard-coded in the rStar2 entry script) through
  :class:`toolkit.rlinf.JudgeToolHandler`: same tool names and config keys
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

__all__ = ['REWARD_NAME', 'register']

logger = logging.getLogger('toolkit.rlinf_ext')

REWARD_NAME = 'codejudge'


def _register_reward() -> None:
    rewards: Any = importlib.import_module('rlinf.algorithms.rewards')
    if REWARD_NAME not in rewards.reward_registry:
        from toolkit.rlinf_reward import CodeJudgeReward

        rewards.register_reward(REWARD_NAME, CodeJudgeReward)


def _reroute_http_tool_worker() -> None:
    module: Any = importlib.import_module('rlinf.agents.rstar2.http_tool_worker')
    cls = module.HttpToolWorker
    if getattr(cls, '_toolkit_original', None) is not None:
        return
    original = cls._process_requests

    async def _process_requests(self: Any) -> None:
        # The stock start_server() creates this coroutine as a task in the actor's event loop.
        if not codejudge_config(self.cfg).get('toolkit', True):
            await original(self)
            return
        self._toolkit_handler = handler_from_config(self.cfg)
        logger.info('HttpToolWorker served by toolkit.rlinf.JudgeToolHandler (%s)', self._toolkit_handler.base_url)
        await self._toolkit_handler.serve(self.input_channel, self.output_channel)

    cls._toolkit_original = original
    cls._process_requests = _process_requests


def register() -> None:
    """Install the judge reward and the ``HttpToolWorker`` reroute in this RLinf process."""
    for step in (_register_reward, _reroute_http_tool_worker):
        try:
            step()
        except ImportError as e:  # a partial rlinf install: keep what can be installed
            logger.warning('toolkit.rlinf_ext: %s skipped: %s', step.__name__, e)
