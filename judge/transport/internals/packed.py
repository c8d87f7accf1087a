"""A few Redis commands in one write, on one held connection, without redis-py's per-call machinery.

INTERNAL (see `judge.transport.internals`): uses redis-py's connection-level methods
``ConnectionPool.get_connection``, ``Connection.pack_commands``, ``send_packed_command`` and
``read_response``, which redis-py does not document for applications.

A redis-py pipeline builds a pipeline object, a retry wrapper, observability hooks and a connection
checkout around every call: most of its CPU for two commands is not the socket round trip.  The
worker pays that on every task, in its main process (the message's unacked bookkeeping and its ack)
and in the pool process (the reply), so those calls come here: the commands are packed with the
connection's own encoder, written at once, and their replies read in order.

Only the fast path lives here.  On any failure the held connection is dropped and the caller falls
back to its ordinary redis-py call, which keeps redis-py's retry policy and errors.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import redis

logger = logging.getLogger('judge.transport.internals.packed')

Command = tuple[Any, ...]


def transaction_ran(replies: list[Any]) -> bool:
    """Whether the replies of MULTI ... EXEC say every command in it succeeded."""
    executed = replies[-1] if replies else None
    return isinstance(executed, list) and not any(isinstance(r, Exception) for r in executed)


class PackedCalls:
    """Sends batches of commands on one connection borrowed for good from a redis-py pool.

    Not thread-safe: use one instance per thread (the worker's main loop and each pool process are
    single-threaded).
    """

    def __init__(self, pool: Callable[[], redis.ConnectionPool]) -> None:
        self._pool = pool
        self._owner: redis.ConnectionPool | None = None
        self._conn: Any = None

    def _connection(self) -> Any:
        pool = self._pool()
        if self._conn is None or self._owner is not pool:
            self.close()
            self._owner, self._conn = pool, pool.get_connection()
        return self._conn

    def call(self, commands: Sequence[Command]) -> list[Any] | None:
        """The commands' replies in order, or ``None`` if the fast path failed (use the slow one).

        Never raises for a Redis or socket error: the connection is dropped and ``None`` returned.
        """
        try:
            conn = self._connection()
            conn.send_packed_command(conn.pack_commands(commands), check_health=False)
            return [conn.read_response() for _ in commands]
        except (redis.RedisError, OSError) as exc:
            logger.debug('packed call failed (%s); falling back', exc)
            self.close()
            return None

    def close(self) -> None:
        """Drop the held connection (its replies may be out of step)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.disconnect()
            except Exception:  # a broken socket may fail to close; it is gone either way
                pass
