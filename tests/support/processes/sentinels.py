"""A local Redis Sentinel deployment for tests: a primary, a replica and three Sentinels, all real.

`Sentinels.cut_tail` makes the replica miss what the primary takes from then on, the way a failover
loses the unreplicated tail: an ACL on the primary denies ``PSYNC``/``SYNC`` and its replica link is
closed, so the replica cannot catch up while clients keep writing to the primary.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from judge.stack import free_port, wait_port
from tests.support.processes.services import Service, start_redis

MASTER = 'judgemaster'
DOWN_AFTER_MS = 1000


class Sentinels:
    """Primary, replica and three Sentinels (quorum 2) on free loopback ports, logging to ``log_dir``."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.primary, self.primary_port = start_redis(log_dir)
        self.replica, self.replica_port = start_redis(log_dir)
        self.sentinels: list[Service] = []
        self.ports: list[int] = []
        try:
            replica = redis.Redis(port=self.replica_port)
            replica.replicaof('127.0.0.1', self.primary_port)
            self._wait(lambda: replica.info('replication').get('master_link_status') == 'up', 'replica in sync')
            for k in range(3):
                port = free_port()
                conf = log_dir / f'sentinel-{k}.conf'
                conf.write_text(
                    f'port {port}\nbind 127.0.0.1\ndir {log_dir}\n'
                    f'sentinel monitor {MASTER} 127.0.0.1 {self.primary_port} 2\n'
                    f'sentinel down-after-milliseconds {MASTER} {DOWN_AFTER_MS}\n'
                    f'sentinel failover-timeout {MASTER} 10000\n'
                )
                self.sentinels.append(
                    Service(f'sentinel-{port}', ['redis-server', str(conf), '--sentinel'], dict(os.environ), log_dir)
                )
                self.ports.append(port)
                wait_port(port)
            self._wait(
                lambda: self._known('REPLICAS', 1) and self._known('SENTINELS', 2),
                'sentinels see the replica and each other',
            )
        except BaseException:
            self.stop()
            raise

    @property
    def url(self) -> str:
        """``REDIS_URI`` naming the three Sentinels."""
        return ';'.join(f'sentinel://127.0.0.1:{p}' for p in self.ports) + '/0'

    def _sentinel(self, k: int = 0) -> redis.Redis:
        return redis.Redis(port=self.ports[k], socket_timeout=2)

    def _known(self, command: str, n: int) -> bool:
        """Whether every Sentinel lists ``n`` entries for ``SENTINEL <command> <master>``."""
        for k in range(len(self.ports)):
            entries: Any = self._sentinel(k).execute_command('SENTINEL', command, MASTER)  # type: ignore[no-untyped-call]
            if len(entries) != n:
                return False
        return True

    @staticmethod
    def _wait(cond: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if cond():
                    return
            except redis.RedisError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f'{what}: not within {timeout_s}s')

    def master_port(self) -> int:
        """The port the Sentinels name as master now."""
        address: Any = self._sentinel().sentinel_get_master_addr_by_name(MASTER)
        return int(address[1])

    def cut_tail(self) -> None:
        """From now on the replica misses what the primary takes (see the module docstring)."""
        primary = redis.Redis(port=self.primary_port)
        primary.execute_command('ACL', 'SETUSER', 'default', '-psync', '-sync')  # type: ignore[no-untyped-call]
        primary.execute_command('CLIENT', 'KILL', 'TYPE', 'replica')  # type: ignore[no-untyped-call]

    def replica_offset_behind(self) -> int:
        """Bytes of the primary's replication stream the replica lacks."""
        primary = redis.Redis(port=self.primary_port).info('replication')['master_repl_offset']
        replica = redis.Redis(port=self.replica_port).info('replication')['master_repl_offset']
        return int(primary) - int(replica)

    def kill_primary(self) -> None:
        """SIGKILL the primary; it stays dead."""
        os.kill(self.primary.proc.pid, signal.SIGKILL)
        self.primary.proc.wait(10)

    def wait_promoted(self, timeout_s: float = 60.0) -> None:
        """Until the Sentinels name the replica as master."""
        self._wait(lambda: self.master_port() == self.replica_port, 'replica promoted', timeout_s)

    def stop(self) -> None:
        for svc in [*self.sentinels, self.replica, self.primary]:
            svc.stop()
