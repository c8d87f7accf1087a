"""The gateway sends one session operation to the session's node through Celery, and waits for it.

The job goes to the node's own queue (`judge.transport.sessions.store.session_queue`), which only that
node's worker consumes: on the fast path as a prebuilt message (`judge.transport.internals.envelope`),
on the stock path with ``send_task``.  Either way the worker pushes the answer onto the call's own
reply list, which the gateway pops without blocking its loop.  While it waits it asks, about once a
second, whether the node is still alive: a node that died mid-call answers `NodeLost`, and the caller
places the session elsewhere and sends the call again (the new node rebuilds it by replay).
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from celery import Celery

from judge.contracts.sessions import SESSION_TASK, SessionJob
from judge.transport.sessions.store import PRIORITY, session_queue
from judge.transport.shard import Shard

logger = logging.getLogger('judge.transport.sessions.calls')

CHECK_EVERY_S = 1.0


class NodeLost(Exception):
    """The node holding the session stopped saying it is alive while the call waited."""


class SessionCalls:
    """Publishes session jobs on one shard and waits for their answers."""

    def __init__(self, app: Celery, shard: Shard, path: str) -> None:
        self.app = app
        self.shard = shard
        self.path = path
        self._threads: ThreadPoolExecutor | None = None
        if path == 'fast':
            from judge.transport.internals.envelope import Envelopes

            self._envelopes: Any = Envelopes(app)

    async def call(
        self, job: SessionJob, node: str, wait_s: float, alive: Callable[[], Awaitable[bool]]
    ) -> dict[str, Any] | None:
        """Run ``job`` on ``node``; its answer, or None when ``wait_s`` passed (`NodeLost`: the node died)."""
        reply_to = self.shard.keys.reply(uuid.uuid4().hex)
        job = {**job, 'reply_to': reply_to}
        queue = session_queue(node)
        argsrepr = f'(op={job["op"]!r}, sid={job["sid"]!r}, epoch={job["epoch"]})'
        if self.path == 'fast':
            message = self._envelopes.build(
                SESSION_TASK,
                (job,),
                queue=queue,
                priority=PRIORITY,
                expires_s=wait_s,
                group_id=job['call'],
                group_index=0,
                argsrepr=argsrepr,
            )
            await self.shard.aclient.lpush(self.shard.keys.queue_list(queue, PRIORITY), message)
        else:
            if self._threads is None:
                self._threads = ThreadPoolExecutor(4, thread_name_prefix='judge-sessions')
            await asyncio.get_running_loop().run_in_executor(self._threads, self._send, job, queue, wait_s, argsrepr)
        try:
            return await self._wait(reply_to, wait_s, alive)
        finally:
            await self.shard.aclient.delete(reply_to)

    def _send(self, job: SessionJob, queue: str, wait_s: float, argsrepr: str) -> None:
        self.app.send_task(
            SESSION_TASK,
            args=(job,),
            queue=queue,
            priority=PRIORITY,
            expires=wait_s,
            ignore_result=True,
            argsrepr=argsrepr,
            kwargsrepr='{}',
        )

    async def _wait(self, reply_to: str, wait_s: float, alive: Callable[[], Awaitable[bool]]) -> dict[str, Any] | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while True:
            left = deadline - loop.time()
            if left <= 0:
                return None
            item = await self.shard.aclient.blpop([reply_to], timeout=min(CHECK_EVERY_S, max(left, 0.01)))
            if item is not None:
                answer: dict[str, Any] = json.loads(item[1])
                return answer
            if not await alive():
                raise NodeLost(reply_to)

    def close(self) -> None:
        """Stop the stock path's threads."""
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
