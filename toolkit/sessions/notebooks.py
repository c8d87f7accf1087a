"""One notebook per trajectory for the tools (`toolkit.verl.tools.JupyterTool`, RLinf's ``jupyter_code``).

``mode`` chooses how a trajectory's cells keep their state:

* ``sessions``: a live session per trajectory key (`toolkit.sessions`), made on its first cell; call
  k costs what call 1 costs.  A session the judge no longer has (expired, closed) is made again and the
  trajectory's earlier cells replayed into it first, quietly.
* ``replay``: every call sends the trajectory's earlier cells and the new one as one program
  (`toolkit.wrapper.wrap_code`, rStar2-Agent's behaviour), through the shared batcher.
* ``auto`` (the default): sessions, or replay for good when the judge has none (404 on ``/sessions``).

Either way the text the model reads is rStar2-Agent's (`toolkit.sessions.cell_text`), errors in its
one-line form.  `Notebooks.fork` branches a trajectory (tree search), `Notebooks.close` ends one;
`Notebooks.close_soon` may be called from any thread (a finalizer).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Any

from toolkit.errors import RequestRejected, ToolkitError
from toolkit.models import Result, Submission
from toolkit.policy import BatchPolicy
from toolkit.sessions.client import Sessions
from toolkit.shared import get_shared
from toolkit.wrapper import wrap_code

__all__ = ['MODES', 'Notebooks']

logger = logging.getLogger('toolkit.sessions.notebooks')

MODES = ('auto', 'sessions', 'replay')


class Notebooks:
    """Trajectory key -> its notebook (see the module docstring)."""

    def __init__(
        self,
        base_url: str,
        policy: BatchPolicy,
        *,
        mode: str = 'auto',
        kind: str = 'scientific',
        ttl_s: float | None = None,
        max_trajectories: int = 4096,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f'mode must be one of {MODES}, not {mode!r}')
        self.base_url, self.policy, self.mode, self.kind, self.ttl_s = base_url, policy, mode, kind, ttl_s
        self.max_trajectories = max_trajectories
        self.history: collections.OrderedDict[str, list[str]] = collections.OrderedDict()
        self.sessions: dict[str, str] = {}
        """Trajectory key -> live session id."""
        self._client: Sessions | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def cells(self, key: str) -> list[str]:
        """The trajectory's cells so far (least recently used trajectories forgotten past the bound)."""
        cells = self.history.setdefault(key, [])
        self.history.move_to_end(key)
        while len(self.history) > self.max_trajectories:
            old, _ = self.history.popitem(last=False)
            self.close_soon(old)
        return cells

    def _sessions(self) -> Sessions:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            retry = self.policy.retry
            self._client = Sessions(self.base_url, deadline_s=self.policy.deadline_s, retry=retry)
            self._loop = loop
        return self._client

    async def run(self, key: str, code: str) -> Result:
        """Run ``code`` as the trajectory's next cell; the result (``ToolkitError`` when none came)."""
        history = self.cells(key)
        if self.mode != 'replay':
            try:
                result: Result = await self._run_live(key, code, history)
            except RequestRejected as err:
                if self.mode == 'sessions' or err.status != 404 or key in self.sessions:
                    raise
                logger.warning('the judge has no sessions (%s): notebooks replay their cells', err)
                self.mode = 'replay'
            else:
                history.append(code)
                return result
        result = await get_shared(self.base_url, self.policy).submit(Submission(wrap_code(code, history)))
        history.append(code)
        return result

    async def _run_live(self, key: str, code: str, history: list[str]) -> Result:
        sessions = self._sessions()
        sid = self.sessions.get(key)
        if sid is not None:
            try:
                return await sessions.run(sid, code, error_style='line')
            except RequestRejected as err:
                if err.status != 404:
                    raise
                logger.info('session %s of trajectory %s is gone: made again from its %d cells', sid, key, len(history))
        session = await sessions.create(kind=self.kind, ttl_s=self.ttl_s)
        self.sessions[key] = session.id
        for earlier in history:
            await session.run(earlier, value=False, error_style='line')
        return await session.run(code, error_style='line')

    async def fork(self, key: str, keys: list[str]) -> None:
        """Branch trajectory ``key`` into ``keys``, each starting from its state (a session fork, or its cells)."""
        history = self.cells(key)
        sid = self.sessions.get(key)
        if sid is not None and self.mode != 'replay':
            children = await self._sessions().fork(sid, len(keys))
            for child_key, child in zip(keys, children, strict=True):
                self.sessions[child_key] = child.id
        for child_key in keys:
            self.history[child_key] = list(history)

    async def close(self, key: str) -> None:
        """End trajectory ``key`` (its session too); never raises."""
        self.history.pop(key, None)
        sid = self.sessions.pop(key, None)
        if sid is None or self._client is None:
            return
        try:
            await self._client.close(sid)
        except ToolkitError as err:  # the judge's idle TTL ends it anyway
            logger.info('could not close session %s: %s', sid, err)

    def close_soon(self, key: str) -> None:
        """`close` from any thread (a finalizer): scheduled on the loop the sessions run on."""
        loop = self._loop
        if loop is None or loop.is_closed() or key not in self.sessions:
            self.history.pop(key, None)
            return

        def start() -> None:
            loop.create_task(self.close(key))

        try:
            loop.call_soon_threadsafe(start)
        except RuntimeError:  # the loop stopped meanwhile
            pass

    async def aclose(self) -> None:
        """Close the HTTP client of the sessions (the sessions themselves stay: `close` ends them)."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def stats(self) -> dict[str, Any]:
        """Trajectories held, live sessions, mode."""
        return {'trajectories': len(self.history), 'sessions': len(self.sessions), 'mode': self.mode}
