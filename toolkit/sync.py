"""``SyncJudgeClient``: a blocking, thread-safe facade for code without an event loop.

It runs a private event loop in a daemon thread; every method hands a coroutine to that loop and
waits for it, so any number of threads (SkyRL env pools, reward managers, process-pool workers) can
share one client and their calls are batched together.

Usage::

    with SyncJudgeClient('http://127.0.0.1:8088') as judge:
        res = judge.run('print(input()[::-1])', input='abc')
        assert res.stdout == 'cba\\n'
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Coroutine, Sequence
from types import TracebackType
from typing import Any, TypeVar

from toolkit.batcher import RequestProcessor
from toolkit.client import DEFAULT_BASE_URL, JudgeClient
from toolkit.errors import ProcessorClosed, ToolkitError
from toolkit.models import Language, Result, Submission
from toolkit.policy import BatchPolicy

__all__ = ['SyncJudgeClient']

T = TypeVar('T')


class SyncJudgeClient:
    """Blocking client; ``run``/``judge`` go through a batching ``RequestProcessor``.

    :param base_url: gateway URL.
    :param policy: batch policy of the ``/run`` processor (``judge`` uses the same with ``/judge/long-batch``).
    :param margin_s: extra wait beyond a submission's deadline before a call gives up (never needed
        in practice: the processor answers by the deadline).
    """

    def __init__(
        self, base_url: str = DEFAULT_BASE_URL, policy: BatchPolicy | None = None, *, margin_s: float = 5.0
    ) -> None:
        self.base_url = base_url
        self.policy = policy or BatchPolicy()
        self.margin_s = margin_s
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name='toolkit-sync-loop', daemon=True)
        self._thread.start()
        self._lock = threading.Lock()
        self._closed = False
        self._client = JudgeClient(base_url)
        self._processors: dict[str, RequestProcessor] = {}

    def _call(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        if self._closed:
            coro.close()
            raise ProcessorClosed('SyncJudgeClient is closed')
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(timeout_s)

    def _processor(self, route: str) -> RequestProcessor:
        with self._lock:
            proc = self._processors.get(route)
            if proc is None:
                policy = dataclasses.replace(self.policy, route=route)
                proc = self._processors[route] = RequestProcessor(self.base_url, policy)
            return proc

    def _wait_s(self, deadline_s: float | None) -> float:
        return (deadline_s or self.policy.deadline_s) + self.margin_s

    def submit(self, sub: Submission, *, deadline_s: float | None = None, judge: bool = False) -> Result:
        """Run one submission through the batcher (``/judge/long-batch`` if ``judge``); may raise ``ToolkitError``."""
        proc = self._processor('/judge/long-batch' if judge else self.policy.route)
        return self._call(proc.submit(sub, deadline_s=deadline_s), self._wait_s(deadline_s))

    def submit_many(
        self, subs: Sequence[Submission], *, deadline_s: float | None = None, judge: bool = False
    ) -> list[Result | ToolkitError]:
        """Run many submissions through the batcher; errors are returned in place."""
        proc = self._processor('/judge/long-batch' if judge else self.policy.route)
        return self._call(proc.submit_many(subs, deadline_s=deadline_s), self._wait_s(deadline_s))

    def run(
        self,
        solution: str,
        *,
        input: str | None = None,
        expected_output: str | None = None,
        language: Language = 'python',
        deadline_s: float | None = None,
    ) -> Result:
        """Run code and return its result with stdout/stderr."""
        sub = Submission(solution, type=language, input=input, expected_output=expected_output)
        return self.submit(sub, deadline_s=deadline_s)

    def judge(
        self,
        solution: str,
        *,
        expected_output: str,
        input: str | None = None,
        language: Language = 'python',
        deadline_s: float | None = None,
    ) -> Result:
        """Run code against one test; ``result.success`` tells whether stdout matched."""
        sub = Submission(solution, type=language, input=input, expected_output=expected_output)
        return self.submit(sub, deadline_s=deadline_s, judge=True)

    def run_batch(
        self, subs: Sequence[Submission], *, long: bool = True, timeout_s: float | None = None
    ) -> list[Result]:
        """One direct HTTP batch (no batcher, no retries); raises ``ToolkitError`` on failure."""
        return self._call(self._client.run_batch(subs, long=long, timeout_s=timeout_s))

    def judge_batch(
        self, subs: Sequence[Submission], *, long: bool = True, timeout_s: float | None = None
    ) -> list[Result]:
        """One direct ``/judge`` HTTP batch (no stdout/stderr in the results)."""
        return self._call(self._client.judge_batch(subs, long=long, timeout_s=timeout_s))

    def ping(self) -> bool:
        """True when the gateway answers ``GET /ping``."""
        return self._call(self._client.ping())

    def status(self) -> dict[str, Any]:
        """``GET /status``."""
        return self._call(self._client.status())

    def stats(self) -> dict[str, dict[str, Any]]:
        """Counters of each batcher, by route."""
        with self._lock:
            procs = dict(self._processors)
        return {route: proc.stats() for route, proc in procs.items()}

    def close(self, *, drain_timeout_s: float = 5.0) -> None:
        """Drain and close the batchers, close the HTTP session, stop the loop thread.  Idempotent."""
        if self._closed:
            return
        self._closed = True

        async def shutdown() -> None:
            await asyncio.gather(*(p.close(drain_timeout_s=drain_timeout_s) for p in self._processors.values()))
            await self._client.close()

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(drain_timeout_s + 10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> SyncJudgeClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
