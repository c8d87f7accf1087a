"""The in-flight cap of all gateway processes together, counted in the first shard's Redis.

Every gateway process is a member of ``judge:inflight`` (its count of admitted, unanswered
submissions) and ``judge:gateways`` (when its lease ends, by Redis's clock).  `Admission.acquire`
runs one Lua script: members whose lease ended are dropped (so a crashed process's share comes back
after at most ``lease_s``), this process's lease is renewed, what it released since its last call
is subtracted, and ``n`` is added to its count if the total stays within the cap.
`Admission.release` counts locally and lets the next acquire carry it, or a flush `RELEASE_FLUSH_S`
later when no acquire comes first: one round trip per request, not two.  Near the cap (the total
last seen within `NEAR_CAP` of it) releases are flushed at once, so no process refuses work because
another one's release is still on its way.  `Admission.keep_alive` renews the
lease every third of it and records the count again when Redis lost it (a restart) or an update
may not have landed.  When Redis cannot be reached, the process admits against the cap on its own
count alone.  With no cap (0) nothing is counted in Redis.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from typing import Any

from judge.transport.shard import Shard

logger = logging.getLogger('judge.transport.gateway.admission')

KEY_TTL_S = 120
"""Both keys disappear this long after the last gateway process touched them."""
RELEASE_FLUSH_S = 0.02
"""Released submissions reach Redis with the next acquire, or after this long."""
NEAR_CAP = 0.9

_PRELUDE = """
if redis.replicate_commands then redis.replicate_commands() end
local now = redis.call('TIME')
local t = tonumber(now[1]) + tonumber(now[2]) / 1000000
local dead = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', t)
for _, member in ipairs(dead) do redis.call('HDEL', KEYS[1], member) end
if #dead > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', t) end
"""
_TOTAL = """
local total = 0
for _, v in ipairs(redis.call('HVALS', KEYS[1])) do total = total + tonumber(v) end
"""
_RENEW = """
redis.call('ZADD', KEYS[2], t + tonumber(ARGV[3]), ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[4])
"""
# KEYS: in-flight hash, lease ZSET.  ARGV: member, n, lease_s, key ttl, cap, released.  -> {admitted, total}
ACQUIRE = (
    _PRELUDE
    + _RENEW
    + """
if tonumber(ARGV[6]) > 0 then redis.call('HINCRBY', KEYS[1], ARGV[1], -tonumber(ARGV[6])) end
"""
    + _TOTAL
    + """
local n = tonumber(ARGV[2])
local cap = tonumber(ARGV[5])
if cap > 0 and total + n > cap then return {0, total} end
redis.call('HINCRBY', KEYS[1], ARGV[1], n)
return {1, total + n}
"""
)
# ARGV: member, this process's count, lease_s, key ttl, '1' to record the count whatever is there.
HEARTBEAT = (
    _PRELUDE
    + _RENEW
    + """
local count = tonumber(ARGV[2])
if ARGV[5] == '1' or (count > 0 and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0) then
  if count > 0 then redis.call('HSET', KEYS[1], ARGV[1], count) else redis.call('HDEL', KEYS[1], ARGV[1]) end
end
"""
    + _TOTAL
    + """
return {total, redis.call('ZCARD', KEYS[2])}
"""
)
# -> {total, live members}
SNAPSHOT = (
    _PRELUDE
    + _TOTAL
    + """
return {total, redis.call('ZCARD', KEYS[2])}
"""
)


class Admission:
    """This gateway process's share of the cluster-wide in-flight cap (see the module docstring).

    :param shard: where the counts live (the first shard).
    :param cap: the most submissions in flight in all processes together; 0: no cap, nothing counted.
    :param lease_s: how long a process's share outlives its last word (a crash's cost).
    """

    def __init__(self, shard: Shard, cap: int, lease_s: float = 15.0) -> None:
        self.shard = shard
        self.cap = cap
        self.lease_s = lease_s
        self.member = f'{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}'
        self.count = 0
        """Submissions this process admitted and has not released."""
        self.dirty = False
        """An update may not have reached Redis: the next heartbeat records `count` as it is."""
        self.unreleased = 0
        """Released here, not yet subtracted in Redis."""
        self.total = 0
        """The cluster's total at the last acquire."""
        self._flush: asyncio.TimerHandle | None = None
        self._scripts: dict[str, Any] = {}

    def _keys(self) -> list[str]:
        return [self.shard.keys.in_flight, self.shard.keys.gateways]

    async def _call(self, name: str, text: str, *args: Any) -> list[int]:
        script = self._scripts.get(name)
        if script is None:
            script = self._scripts[name] = self.shard.aclient.register_script(text)
        reply = await script(keys=self._keys(), args=[self.member, *args])
        return [int(x) for x in reply]

    async def acquire(self, n: int) -> tuple[bool, int]:
        """Admit ``n`` submissions if the cluster's total stays within the cap: (admitted, total)."""
        if not self.cap:
            self.count += n
            return True, self.count
        released, self.unreleased = self.unreleased, 0
        try:
            admitted, total = await self._call('acquire', ACQUIRE, n, self.lease_s, KEY_TTL_S, self.cap, released)
        except asyncio.CancelledError:
            self.dirty = True  # the script may or may not have run
            raise
        except Exception as exc:
            logger.warning('in-flight count unavailable (%s): admitting against this process alone', exc)
            self.dirty = True
            admitted = int(self.count + n <= self.cap)
            total = self.count + n * admitted
        if admitted:
            self.count += n
        self.total = total
        return bool(admitted), total

    def release(self, n: int) -> None:
        """Give back ``n`` admitted submissions (subtracted in Redis by the next acquire or flush)."""
        self.count -= n
        if not self.cap:
            return
        self.unreleased += n
        near = self.total >= NEAR_CAP * self.cap
        if near and self._flush is not None:
            self._flush.cancel()
            self._flush = None
        if self._flush is None:
            self._flush = asyncio.get_running_loop().call_later(0 if near else RELEASE_FLUSH_S, self._start_flush)

    def _start_flush(self) -> None:
        self._flush = None
        if self.unreleased:
            task = asyncio.get_running_loop().create_task(self.flush())
            task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def flush(self) -> None:
        """Subtract in Redis what was released and no acquire carried yet."""
        released, self.unreleased = self.unreleased, 0
        if not released:
            return
        try:
            await self.shard.aclient.hincrby(self.shard.keys.in_flight, self.member, -released)
        except asyncio.CancelledError:
            self.dirty = True
            raise
        except Exception as exc:
            logger.warning('could not release %d in-flight submissions (%s); the heartbeat will', released, exc)
            self.dirty = True

    async def snapshot(self) -> tuple[int, int]:
        """(submissions in flight in every live gateway process, live gateway processes)."""
        if not self.cap:
            return self.count, 1
        await self.flush()
        total, members = await self._call('snapshot', SNAPSHOT)
        return total, members

    async def heartbeat(self) -> tuple[int, int]:
        """Renew the lease (record the count again if needed): (cluster total, live processes)."""
        dirty = self.dirty
        self.dirty = False
        try:
            total, members = await self._call('heartbeat', HEARTBEAT, self.count, self.lease_s, KEY_TTL_S, int(dirty))
        except Exception:
            self.dirty = True
            raise
        return total, members

    async def keep_alive(self) -> None:
        """Heartbeat every third of the lease, for the life of the process (cancel it to stop)."""
        if not self.cap:
            return
        while True:
            try:
                await self.heartbeat()
            except Exception as exc:
                logger.debug('in-flight heartbeat failed: %s', exc)
            await asyncio.sleep(self.lease_s / 3)

    async def leave(self) -> None:
        """Withdraw this process (a clean shutdown): its share is free at once."""
        if self._flush is not None:
            self._flush.cancel()
        if not self.cap:
            return
        try:
            pipe = self.shard.aclient.pipeline(transaction=False)
            pipe.hdel(self.shard.keys.in_flight, self.member)
            pipe.zrem(self.shard.keys.gateways, self.member)
            await pipe.execute()
        except Exception as exc:
            logger.warning('could not withdraw from the in-flight count: %s', exc)
