"""``JudgeToolWorker``: an RLinf ``ToolWorker`` serving the judge's tools (imports rlinf, so torch).

Launch it as RLinf launches tool workers and hand it to ``AgentRunner``::

    from toolkit.rlinf import JudgeToolWorker
    group = JudgeToolWorker.create_group(cfg).launch(
        cluster, name='JudgeToolWorker', placement_strategy=NodePlacementStrategy([0]))
    tool_workers = {group: JudgeToolWorker.worker_info()}

Its methods ``start_server``/``stop_server`` are coroutines, so Ray runs it as an asyncio actor and
the serving loop lives in the actor's event loop (a worker class without ``async def`` methods
becomes a threaded actor with no running loop).  Config: ``cfg.tools.codejudge`` (see
:func:`toolkit.rlinf.handler_from_config`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from rlinf.workers.agent.tool_worker import ToolWorker, ToolWorkerInfo

from toolkit.rlinf import JudgeToolHandler, handler_from_config
from toolkit.shared import close_shared, get_shared

__all__ = ['JudgeToolWorker']

logger = logging.getLogger('toolkit.rlinf.worker')


class JudgeToolWorker(ToolWorker):  # type: ignore[misc]
    """RLinf tool worker for ``python_code_with_standard_io`` and ``jupyter_code`` (sessions keep cells)."""

    TOOL_NAMES: tuple[str, ...] = JudgeToolHandler.tool_names

    def __init__(self, cfg: Any) -> None:
        super().__init__()
        self.cfg = cfg
        self.handler = handler_from_config(cfg)
        self._serve_task: asyncio.Task[None] | None = None

    @classmethod
    def worker_info(cls) -> Any:
        """RLinf's ``ToolWorkerInfo`` for ``AgentRunner(tool_workers={group: info})``."""
        return ToolWorkerInfo(tool_names=list(cls.TOOL_NAMES), has_session=True)

    async def tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI function schemas of the tools served."""
        return self.handler.tool_schemas()

    async def start_server(self) -> None:
        """Start serving the input channel (returns at once; the loop runs in the actor's event loop)."""
        if self._serve_task is None or self._serve_task.done():
            loop = asyncio.get_running_loop()
            self._serve_task = loop.create_task(self.handler.serve(self.input_channel, self.output_channel))

    async def stop_server(self) -> None:
        """Stop reading requests and close the HTTP pool (calls in flight are answered first, 5 s at most)."""
        if self._serve_task is not None:
            self._serve_task.cancel()
            self._serve_task = None
        await close_shared(drain_timeout_s=5.0)

    async def stats(self) -> dict[str, Any]:
        """Batcher statistics of this worker (batches, mean batch size, retries, deadline misses) and its
        notebooks (``jupyter_code``: trajectories held, live sessions, mode)."""
        found: dict[str, Any] = get_shared(self.handler.base_url, self.handler.policy).stats()
        return found | {'notebooks': self.handler.notebooks.stats()}
