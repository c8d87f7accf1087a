"""RLinf adapter: a tool worker that answers every ``ToolChannelRequest``, keyed by its session id.

:class:`JudgeToolHandler` is the framework-free core: ``await handler.handle(request)`` always
returns a ``ToolChannelResponse`` (RLinf's class when installed, a look-alike otherwise), on
success, error or deadline, never raising.  ``serve(input_channel, output_channel)`` loops over a
channel and puts each reply with ``key=session_id``.  ``session_start``/``session_end`` manage a
per-session cell history so ``jupyter_code`` behaves like a notebook.

When rlinf is importable, :data:`JudgeToolWorker` is a ``rlinf.workers.agent.tool_worker.ToolWorker``
subclass (config under ``cfg.tools.codejudge``: ``host_addr``, ``host_port`` or ``base_url``, plus the
tool keys of :func:`toolkit.policy.policy_from_config`); otherwise it is ``None``.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import importlib
import logging
import time
from typing import Any

from toolkit.client import DEFAULT_BASE_URL
from toolkit.errors import ToolkitError
from toolkit.models import Submission
from toolkit.policy import BatchPolicy, policy_from_config
from toolkit.shared import get_shared
from toolkit.wrapper import format_error_text, format_tool_text, wrap_code

__all__ = ['JudgeToolHandler', 'JudgeToolWorker', 'ToolChannelRequest', 'ToolChannelResponse']

logger = logging.getLogger('toolkit.rlinf')

PYTHON_TOOL = 'python_code_with_standard_io'
JUPYTER_TOOL = 'jupyter_code'


def _soft_import(*names: str) -> Any:
    for name in names:
        try:
            return importlib.import_module(name)
        except Exception as e:  # missing, or present but broken (ray/torch): act as if absent
            logger.debug('cannot import %s: %s', name, e)
    return None


@dataclasses.dataclass
class _Request:
    session_id: str
    request_type: str
    tool_name: str | None = None
    tool_args: dict[str, Any] | None = None


@dataclasses.dataclass
class _Response:
    success: bool
    result: Any | None = None
    session_state: Any | None = None
    meta_info: dict[str, Any] | None = None


_schema: Any = _soft_import('rlinf.agents.tool_call.schema', 'rlinf.data.tool_call.tool_io_struct')
ToolChannelRequest: Any = getattr(_schema, 'ToolChannelRequest', _Request)
"""RLinf's request class, or a dataclass with the same fields when rlinf is absent."""
ToolChannelResponse: Any = getattr(_schema, 'ToolChannelResponse', _Response)
"""RLinf's response class, or a dataclass with the same fields when rlinf is absent."""


class JudgeToolHandler:
    """Turns RLinf tool requests into judge submissions; always replies.

    :param base_url: gateway URL.
    :param policy: batch policy (deadline, batch size...) of the shared processor.
    :param max_sessions: most session histories kept (least recently used dropped).
    """

    def __init__(
        self, base_url: str = DEFAULT_BASE_URL, policy: BatchPolicy | None = None, *, max_sessions: int = 65536
    ) -> None:
        self.base_url = base_url
        self.policy = policy or BatchPolicy(deadline_s=60.0)
        self.max_sessions = max_sessions
        self._sessions: collections.OrderedDict[str, list[str]] = collections.OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()

    def _history(self, session_id: str) -> list[str]:
        cells = self._sessions.setdefault(session_id, [])
        self._sessions.move_to_end(session_id)
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
        return cells

    async def handle(self, request: Any) -> Any:
        """Reply to one request (never raises, never waits past the policy deadline + 1 s)."""
        start = time.monotonic()
        try:
            return await asyncio.wait_for(self._handle(request), self.policy.deadline_s + 1.0)
        except TimeoutError:
            meta = {'infra_error': True, 'reason': 'queue_timeout', 'latency_s': time.monotonic() - start}
            return ToolChannelResponse(success=False, result='Tool call failure\nreason: queue_timeout', meta_info=meta)
        except Exception as e:
            logger.exception('tool request failed')
            meta = {'infra_error': True, 'reason': 'internal_error', 'error': f'{type(e).__name__}: {e}'}
            return ToolChannelResponse(success=False, result=f'Error when executing tool: {e}', meta_info=meta)

    async def _handle(self, request: Any) -> Any:
        kind, session_id = request.request_type, request.session_id
        if kind == 'session_start':
            self._history(session_id)
            return ToolChannelResponse(success=True)
        if kind == 'session_end':
            self._sessions.pop(session_id, None)
            return ToolChannelResponse(success=True)
        args = request.tool_args or {}
        code = args.get('code')
        if kind != 'execute' or request.tool_name not in (PYTHON_TOOL, JUPYTER_TOOL) or not isinstance(code, str):
            text = f'Tool call failure\nreason: invalid_input\nstderr: bad request {kind!r} for {request.tool_name!r}'
            return ToolChannelResponse(success=False, result=text, meta_info={'infra_error': False})
        if request.tool_name == JUPYTER_TOOL:
            history = self._history(session_id)
            sub = Submission(wrap_code(code, history))
        else:
            history, stdin = None, args.get('input')
            sub = Submission(wrap_code(code), input=stdin if isinstance(stdin, str) else None)
        try:
            result = await get_shared(self.base_url, self.policy).submit(sub)
        except ToolkitError as err:
            meta = {'infra_error': err.infra, 'reason': err.reason, 'error': str(err), 'attempts': err.attempts}
            return ToolChannelResponse(success=False, result=format_error_text(err), meta_info=meta)
        if history is not None:
            history.append(code)
        meta = {
            'infra_error': result.infra,
            'reason': result.reason,
            'attempts': result.attempts,
            'latency_s': result.latency_s,
            'cost_s': result.cost,
        }
        return ToolChannelResponse(success=not result.infra, result=format_tool_text(result), meta_info=meta)

    async def _reply(self, request: Any, output_channel: Any) -> None:
        reply = await self.handle(request)
        await _channel_put(output_channel, reply, request.session_id)

    async def serve(self, input_channel: Any, output_channel: Any) -> None:
        """Loop: read requests from ``input_channel``, put replies on ``output_channel`` keyed by session.

        Channels are RLinf ``Channel``s, or ``asyncio.Queue``s (replies then go in as ``(key, reply)``).
        """
        while True:
            request = await _channel_get(input_channel)
            task = asyncio.get_running_loop().create_task(self._reply(request, output_channel))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)


async def _channel_get(channel: Any) -> Any:
    if isinstance(channel, asyncio.Queue):
        return await channel.get()
    return await channel.get(async_op=True).async_wait()


async def _channel_put(channel: Any, item: Any, key: str) -> None:
    if isinstance(channel, asyncio.Queue):
        await channel.put((key, item))
    else:
        await channel.put(item, key=key, async_op=True).async_wait()


def _section(cfg: Any, *path: str) -> dict[str, Any]:
    for name in path:
        cfg = cfg.get(name) if isinstance(cfg, dict) else getattr(cfg, name, None)
        if cfg is None:
            return {}
    to_container = getattr(_soft_import('omegaconf'), 'OmegaConf', None)
    if to_container is not None and not isinstance(cfg, dict):
        cfg = to_container.to_container(cfg, resolve=True)
    return dict(cfg) if isinstance(cfg, dict) else {}


def _build_worker_class() -> Any:
    base = getattr(_soft_import('rlinf.workers.agent.tool_worker'), 'ToolWorker', None)
    if base is None:
        return None

    class JudgeToolWorker(base):  # type: ignore[misc,valid-type]
        """RLinf ``ToolWorker`` serving ``python_code_with_standard_io`` and ``jupyter_code`` via the judge."""

        def __init__(self, cfg: Any) -> None:
            super().__init__()
            self.cfg = cfg
            base_url, policy = policy_from_config(_section(cfg, 'tools', 'codejudge'))
            self.handler = JudgeToolHandler(base_url, policy)
            self._serve_task: asyncio.Task[None] | None = None

        def start_server(self) -> None:
            loop = asyncio.get_running_loop()
            self._serve_task = loop.create_task(self.handler.serve(self.input_channel, self.output_channel))

        def stop_server(self) -> None:
            if self._serve_task is not None:
                self._serve_task.cancel()

    JudgeToolWorker.__module__ = __name__
    return JudgeToolWorker


JudgeToolWorker: Any = _build_worker_class()
"""RLinf tool worker class (``None`` when rlinf is not installed)."""
