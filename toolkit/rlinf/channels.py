"""RLinf adapter core: answer every ``ToolChannelRequest`` on RLinf's tool channels, keyed by session.

:class:`JudgeToolHandler` is framework-free: ``await handler.handle(request)`` always returns a
``ToolChannelResponse`` (RLinf's class inside an RLinf process, a look-alike dataclass otherwise),
for good code, a failing program, bad arguments, an unreachable gateway or a missed deadline, within
``deadline_s`` plus half a second, and never raises.  ``serve(input_channel, output_channel)`` loops
over a channel and puts each reply with ``key=session_id``, as RLinf's agent loops expect.

``success`` means what it means in RLinf's ``HttpToolWorker``: the program ran and exited 0
(``run_success and success``).  A failing program, a time limit, bad arguments and infrastructure
failures are ``success=False``; ``meta_info['infra_error']`` tells the last apart.  Session messages
(``session_start``/``session_end``) always succeed: RLinf asserts it.

The RLinf worker class lives in :mod:`toolkit.rlinf.worker` and the configuration-only switch in
:mod:`toolkit.rlinf.ext`.  Importing this module imports neither rlinf nor torch:
``toolkit.rlinf.JudgeToolWorker`` imports them on first access.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import logging
import sys
import time
from typing import TYPE_CHECKING, Any

from toolkit.client import DEFAULT_BASE_URL
from toolkit.errors import ToolkitError
from toolkit.models import Submission
from toolkit.policy import BatchPolicy, policy_from_config
from toolkit.schemas import JUPYTER_TOOL, PYTHON_TOOL, TOOL_SCHEMAS
from toolkit.sessions.client import cell_text
from toolkit.sessions.notebooks import Notebooks
from toolkit.shared import get_shared
from toolkit.wrapper import format_error_text, format_tool_text, wrap_code

__all__ = ['JudgeToolHandler', 'JudgeToolWorker', 'ToolChannelRequest', 'ToolChannelResponse', 'handler_from_config']

if TYPE_CHECKING:  # provided lazily by __getattr__ (the worker imports rlinf, so torch)
    from toolkit.rlinf.worker import JudgeToolWorker

logger = logging.getLogger('toolkit.rlinf')

_SCHEMA_MODULES = ('rlinf.agents.tool_call.schema', 'rlinf.data.tool_call.tool_io_struct')


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


if TYPE_CHECKING:
    ToolChannelRequest = _Request
    ToolChannelResponse = _Response


def _rlinf_schema() -> Any:
    """RLinf's tool I/O module when rlinf is already loaded in this process (never imports it first)."""
    if 'rlinf' not in sys.modules:
        return None
    for name in _SCHEMA_MODULES:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _response(success: bool, result: Any = None, meta: dict[str, Any] | None = None) -> Any:
    cls = getattr(_rlinf_schema(), 'ToolChannelResponse', _Response)
    return cls(success=success, result=result, meta_info=meta)


def _invalid(request: Any, why: str) -> Any:
    text = f'Tool call failure\nreason: invalid_input\nstderr: {why}'
    meta = {'infra_error': False, 'reason': 'invalid_input', 'tool_name': getattr(request, 'tool_name', None)}
    return _response(False, text, meta)


class JudgeToolHandler:
    """Turns RLinf tool requests into judge submissions through the shared batcher; always replies.

    :param base_url: gateway URL.
    :param policy: batch policy of the shared processor; ``policy.deadline_s`` bounds every call.
    :param concurrency_limit: most ``execute`` calls in flight (RLinf's ``tools.codejudge.concurrency_limit``);
        calls beyond it wait, and the wait counts against their deadline.
    :param max_sessions: most notebook histories kept (least recently used dropped).
    :param notebooks: how ``jupyter_code`` keeps a session's state (`toolkit.sessions.notebooks.Notebooks`: a live
        judge session per RLinf session, or replay of its cells); made from the other arguments if absent.
    """

    tool_names: tuple[str, ...] = (PYTHON_TOOL, JUPYTER_TOOL)

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        policy: BatchPolicy | None = None,
        *,
        concurrency_limit: int = 1024,
        max_sessions: int = 65536,
        notebooks: Notebooks | None = None,
    ) -> None:
        if concurrency_limit < 1:
            raise ValueError('concurrency_limit must be >= 1')
        self.base_url = base_url
        self.policy = policy or BatchPolicy(deadline_s=60.0)
        self.concurrency_limit = concurrency_limit
        self.max_sessions = max_sessions
        self._slots: asyncio.Semaphore | None = None
        self.notebooks = notebooks or Notebooks(base_url, self.policy, max_trajectories=max_sessions)
        self._tasks: set[asyncio.Task[None]] = set()

    def tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI function schemas of the tools served (for prompts and RLinf's tool registry)."""
        return [TOOL_SCHEMAS[name] for name in self.tool_names]

    async def handle(self, request: Any) -> Any:
        """Reply to one request; never raises, never takes longer than ``deadline_s`` + 0.5 s."""
        start = time.monotonic()
        kind = getattr(request, 'request_type', None)
        session_id = getattr(request, 'session_id', None)
        if kind == 'session_start':
            self.notebooks.cells(str(session_id))
            return _response(True)
        if kind == 'session_end':  # its live session ends in the background: RLinf waits for this reply
            task = asyncio.get_running_loop().create_task(self.notebooks.close(str(session_id)))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return _response(True)
        if kind != 'execute':
            return _invalid(request, f'unknown request_type {kind!r}')
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.concurrency_limit)
        try:
            async with asyncio.timeout(self.policy.deadline_s + 0.5):
                async with self._slots:
                    return await self._execute(request, start)
        except TimeoutError:
            meta = {'infra_error': True, 'reason': 'queue_timeout', 'latency_s': time.monotonic() - start}
            return _response(False, 'Tool call failure\nreason: queue_timeout\nexecution time: 0.00s', meta)
        except Exception as e:  # a bug here must still produce an answer, or the trajectory hangs
            logger.exception('tool request failed')
            meta = {'infra_error': True, 'reason': 'internal_error', 'error': f'{type(e).__name__}: {e}'}
            return _response(False, 'Tool call failure\nreason: internal_error\nexecution time: 0.00s', meta)

    async def _execute(self, request: Any, start: float) -> Any:
        name, args = request.tool_name, request.tool_args
        if name not in self.tool_names:
            return _invalid(request, f'unknown tool {name!r}; this worker serves {list(self.tool_names)}')
        if not isinstance(args, dict) or not isinstance(args.get('code'), str):
            return _invalid(request, 'the "code" argument must be a string')
        stdin = args.get('input')
        if stdin is not None and not isinstance(stdin, str):
            return _invalid(request, 'the "input" argument must be a string')
        remaining_s = max(self.policy.deadline_s - (time.monotonic() - start), 0.001)
        try:
            if name == JUPYTER_TOOL:
                result = await self.notebooks.run(str(request.session_id), args['code'])
            else:
                sub = Submission(wrap_code(args['code']), input=stdin)
                result = await get_shared(self.base_url, self.policy).submit(sub, deadline_s=remaining_s)
        except ToolkitError as err:
            meta = {'infra_error': err.infra, 'reason': err.reason, 'error': str(err), 'attempts': err.attempts}
            meta['latency_s'] = time.monotonic() - start
            return _response(False, format_error_text(err), meta)
        meta = {
            'infra_error': result.infra,
            'reason': result.reason,
            'verdict': result.verdict,
            'attempts': result.attempts,
            'latency_s': time.monotonic() - start,
            'cost_s': result.cost,
            'batch_size': result.batch_size,
        }
        meta |= {'restored': getattr(result, 'restored', False)} if name == JUPYTER_TOOL else {}
        return _response(result.ok, cell_text(result) if name == JUPYTER_TOOL else format_tool_text(result), meta)

    async def _reply(self, request: Any, output_channel: Any) -> None:
        reply = await self.handle(request)
        try:
            await _channel_put(output_channel, reply, str(getattr(request, 'session_id', '')))
        except Exception:
            logger.exception('cannot put the reply on the output channel')

    async def serve(self, input_channel: Any, output_channel: Any) -> None:
        """Loop: read requests from ``input_channel``, put replies on ``output_channel`` keyed by session.

        Channels are RLinf ``Channel``s, or ``asyncio.Queue``s (replies then go in as ``(key, reply)``).
        Each request is handled in its own task, so concurrent calls reach the batcher together.
        """
        loop = asyncio.get_running_loop()
        while True:
            try:
                request = await _channel_get(input_channel)
            except asyncio.CancelledError:
                raise
            except Exception:  # a broken get must not end the loop: every later call would hang
                logger.exception('cannot read the tool input channel; retrying')
                await asyncio.sleep(0.5)
                continue
            task = loop.create_task(self._reply(request, output_channel))
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


def codejudge_config(cfg: Any) -> dict[str, Any]:
    """``cfg.tools.codejudge`` as a plain dict (OmegaConf ``DictConfig`` or nested dicts; ``{}`` if absent)."""
    for name in ('tools', 'codejudge'):
        cfg = cfg.get(name) if isinstance(cfg, dict) else getattr(cfg, name, None)
        if cfg is None:
            return {}
    if not isinstance(cfg, dict):
        omegaconf = sys.modules.get('omegaconf')
        if omegaconf is not None and isinstance(cfg, omegaconf.DictConfig):
            cfg = omegaconf.OmegaConf.to_container(cfg, resolve=True)
    return dict(cfg) if isinstance(cfg, dict) else {}


def handler_from_config(cfg: Any) -> JudgeToolHandler:
    """A handler configured from RLinf's ``tools.codejudge`` section (``host_addr``, ``host_port``,
    ``concurrency_limit``; plus ``base_url``, ``deadline_s``, ``request_processor_batch_size``...)."""
    section = codejudge_config(cfg)
    section.setdefault('deadline_s', 60.0)
    base_url, policy = policy_from_config(section)
    limit = int(section.get('concurrency_limit') or 1024)
    ttl = section.get('session_ttl_s')
    notebooks = Notebooks(
        base_url,
        policy,
        mode=str(section.get('session_mode', 'auto')),
        kind=str(section.get('session_kind', 'scientific')),
        ttl_s=float(ttl) if ttl else None,
        max_trajectories=int(section.get('max_sessions', 65536)),
    )
    return JudgeToolHandler(
        base_url, policy, concurrency_limit=limit, max_sessions=notebooks.max_trajectories, notebooks=notebooks
    )


def __getattr__(name: str) -> Any:
    if name == 'JudgeToolWorker':
        try:
            from toolkit.rlinf.worker import JudgeToolWorker
        except ImportError as e:
            raise ImportError(f'toolkit.rlinf.JudgeToolWorker needs rlinf (pip install rlinf==0.3.0): {e}') from e
        return JudgeToolWorker
    if name in ('ToolChannelRequest', 'ToolChannelResponse'):
        schema = _rlinf_schema()
        return getattr(schema, name, _Request if name == 'ToolChannelRequest' else _Response)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
