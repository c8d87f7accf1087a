"""The session host: one process per worker instance that keeps the node's live Python sessions.

A live session must outlive the Celery task that made it and be reachable from every pool process
of its worker, so it cannot belong to a slot server.  The first pool process that needs it starts
the host (`judge.sandbox.sessionclient`), which, like a slot server, is a fresh ``python -I`` with a
clean environment that reads its configuration from fd 0 and sets a jail up once (`Jail`: the same
tier, namespaces, Landlock rules and seccomp filter as the slots'; its own slot number); its warm
parents (a fixed ``PYTHONHASHSEED``, so that replay elsewhere repeats ``str`` hashing) fork one process
per session.  Each session then has its own uid family, cgroups (frozen between operations), tmpfs
and Landlock domain (`space`, `cgroup`).  Pool processes connect to the unix socket the launcher
bound (fd ``listen_fd``); each connection is served by a thread, speaking `judge.sandbox.protocol`.
A maintenance thread expires and evicts sessions (`registry`), renews warm parents, reaps orphans,
keeps cgroups ready, and ends the host (and every session) when the worker's main process dies.
"""

from __future__ import annotations

import gc
import os
import resource
import socket
import sys
import threading
import time
from typing import Any

if __name__ == '__main__':  # started as a script: make the package importable
    sys.path.insert(
        0,
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))),
    )

from judge.sandbox.errors import JailError, ProtocolError
from judge.sandbox.kernel import landlock, namespaces
from judge.sandbox.lazylog import get_logger
from judge.sandbox.protocol import recv_message, send_message
from judge.sandbox.server.execute import reap_orphans
from judge.sandbox.server.jail import Jail
from judge.sandbox.server.sessions.cgroup import Groups, mount_roots
from judge.sandbox.server.sessions.ops import Ops, session_rlimits
from judge.sandbox.server.sessions.process import Live
from judge.sandbox.server.sessions.registry import Registry
from judge.sandbox.server.sessions.space import Spaces
from judge.sandbox.server.tiers import read_paths
from judge.sandbox.server.warm.lineage import START_TIMEOUT_S
from judge.sandbox.server.warm.parents import LEAN, SCIENTIFIC, WarmParents
from judge.sandbox.server.warm.zygotes import Zygote, spawn_zygote

logger = get_logger('judge.sandbox.server.sessions.host')
PACKAGE_ROOT = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
)
MAINTAIN_EVERY_S = 2.0
MIB = 1 << 20


class Host:
    """The node's live sessions and what they need (see the module's doc)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.package_fd = os.open(PACKAGE_ROOT, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        self.worker_pidfd = os.pidfd_open(int(config['worker_pid'])) if config.get('worker_pid') else None
        jail_config = {**config, 'keep_writable': [*config.get('keep_writable', []), *mount_roots()]}
        self.jail = Jail(jail_config)
        if self.jail.tier not in ('namespaces', 'landlock'):
            raise JailError(f'live sessions need the namespaces or landlock tier (cgroups), not {self.jail.tier!r}')
        self.prep = self.jail.child_prep()
        self.prep.server_pid = os.getpid()
        if os.getpid() != 1:
            namespaces.set_child_subreaper(True)
        self.hash_seed = int(config.get('hash_seed', 0))
        self.parents = WarmParents(
            self._start_zygote, 10**9, float(config.get('renew_s', 3600)), self.prep.scientific, bare=False
        )
        self.zlock = threading.Lock()
        index = int(config['slot'])
        self.limits = {
            k: config[k] for k in ('memory_mb', 'pids', 'time_s', 'output_bytes', 'capture_bytes', 'file_bytes')
        }
        self.groups = Groups(index, int(config['memory_mb']), int(config['pids']), float(config.get('cpus', 1.0)))
        self.groups.sweep()
        readable = read_paths(self.jail.extra_read) + (['/proc'] if self.jail.tier == 'namespaces' else [])
        self.scoped = landlock.abi_version() >= 6
        families = int(config.get('max_families', 4096))
        self.spaces = Spaces(
            self.jail.work_base,
            int(config['session_uid_base']) + index * families,  # each host its own uids, by slot number
            families,
            readable,
            int(config.get('disk_mb', 64)),
            mounts=True,
            scope=self.scoped,
        )
        budget = int(config.get('budget_mb', 4096)) * MIB
        self.registry = Registry(budget, int(config.get('max_sessions', 2000)), self.discard)
        self.ops = Ops(self, self.registry, self.spaces, self.groups, self.scoped)
        self.stopping = False

    def _start_zygote(self, kind: str) -> Zygote:
        return spawn_zygote(self.prep, self.package_fd, kind, hash_seed=self.hash_seed)

    def _zygote(self, kind: str) -> Zygote:
        """The current warm parent of ``kind`` (started and waited for if there is none)."""
        lineage = self.parents.lineage(kind)
        if not lineage.ready():
            lineage.start_background()
            if lineage.standby is not None:
                lineage.standby.wait_ready(START_TIMEOUT_S)
            if not lineage.ready() or lineage.current is None:
                raise JailError(f'no {kind} warm parent for live sessions')
        return lineage.current  # type: ignore[return-value]

    def spawn(self, sid: str, spec: dict[str, Any]) -> Live:
        """A new session process of ``spec['kind']``, set up in its own family, cgroups and layer, frozen."""
        kind = SCIENTIFIC if spec.get('kind', SCIENTIFIC) == SCIENTIFIC and self.prep.scientific else LEAN
        with self.zlock:
            pid, fds = self._zygote(kind).fork_session()
        memory_mb = int(spec.get('memory_mb') or self.limits['memory_mb'])
        group = self.groups.take(memory_mb)
        group.join(pid)
        family = self.spaces.new_family()
        container, workdir = self.spaces.new_member(family)
        live = Live(sid, pid, fds, group, family, container, workdir)
        live.kind = kind
        live.ttl_s = float(spec.get('ttl_s') or 600)
        layer = self.spaces.layer(container)
        try:
            nofile = 256
            rlimits = session_rlimits(int(spec.get('file_bytes') or self.limits['file_bytes']), nofile)
            live.send({'workdir': workdir, 'uid': family.uid, 'gid': family.uid, 'rlimits': rlimits}, [layer])
        finally:
            os.close(layer)
        answer = live.recv(START_TIMEOUT_S)
        if answer != b'R':
            self.discard(live)
            raise JailError(f'the session process did not start: {answer[:500]!r}')
        live.freeze()
        return live

    def discard(self, live: Live) -> None:
        """Kill a session and remove its cgroups and files."""
        live.close()
        try:
            live.group.remove()
        except OSError:
            logger.exception('could not remove the cgroups of session %s', live.sid)
        self.spaces.drop_member(live.family, live.container)

    def handle(self, header: dict[str, Any], blobs: list[bytes]) -> tuple[dict[str, Any], tuple[bytes, ...]]:
        """One request (`ops`), with the journal of sessions gone since the last reply."""
        op = header.get('op')
        if op == 'ping':
            reply: tuple[dict[str, Any], tuple[bytes, ...]] = self.status(), ()
        elif op == 'create':
            reply = self.ops.create(header)
        elif op == 'cell':
            reply = self.ops.cell(header, blobs[0] if blobs else b'')
        elif op == 'fork':
            reply = self.ops.fork(header)
        elif op == 'close':
            reply = self.ops.close(header)
        elif op == 'info':
            reply = self.ops.info(header)
        elif op == 'shutdown':  # the socket is root's alone: the worker's pool processes, tests
            logger.warning('asked to stop: the session host stops')
            self.stop()
            os._exit(0)
        else:
            reply = {'ok': False, 'error': f'unknown op {op!r}'}, ()
        host = {'sessions': len(self.registry), 'memory_bytes': self.registry.memory_bytes()}
        return {**reply[0], 'journal': self.registry.drain(), 'host': host}, reply[1]

    def status(self) -> dict[str, Any]:
        """The host's tier, sessions and memory."""
        return {
            'ok': True,
            'pid': os.getpid(),
            'tier': self.jail.tier,
            'sessions': len(self.registry),
            'memory_bytes': self.registry.memory_bytes(),
            'budget_bytes': self.registry.budget_bytes,
            'process_fork': self.scoped,
        }

    def serve_connection(self, conn: socket.socket) -> None:
        """Answer one pool process's requests until it hangs up."""
        fd = conn.fileno()
        try:
            while not self.stopping:
                try:
                    header, blobs = recv_message(fd)
                except (ProtocolError, OSError):
                    return
                try:
                    reply, out = self.handle(header, blobs)
                except Exception as exc:
                    logger.exception('session request %s failed', header.get('op'))
                    reply, out = {'ok': False, 'error': f'{type(exc).__name__}: {exc}', 'journal': []}, ()
                send_message(fd, reply, out)
        finally:
            conn.close()

    def maintain(self) -> None:
        """Expire, measure, evict; renew warm parents; reap; keep cgroups ready; watch the worker."""
        while not self.stopping:
            if self.worker_pidfd is not None and _readable(self.worker_pidfd):
                logger.warning('the worker is gone: the session host stops')
                try:
                    self.stop()
                finally:
                    os._exit(0)  # whatever `stop` met: a host whose worker is gone never stays
            try:
                self.registry.expire()
                self.registry.refresh()
                self.registry.make_room(0, 0)
                with self.zlock:
                    for lineage in self.parents.lineages.values():
                        lineage.maintain()
                    self.parents.ask_reap()
                reap_orphans()
                self.groups.refill()
            except Exception:
                logger.exception('session host maintenance failed')
            time.sleep(MAINTAIN_EVERY_S)

    def stop(self) -> None:
        """Kill every session and warm parent."""
        self.stopping = True
        for live in self.registry.all():
            self.registry.pop(live.sid)
            try:
                self.discard(live)
            except Exception:  # the others are stopped all the same
                logger.exception('could not stop session %s', live.sid)
        self.groups.close()
        self.parents.close()


def _readable(fd: int) -> bool:
    import select

    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def main() -> int:
    """Entry point: the configuration on fd 0, a hello on fd 1, then requests on the listening socket."""
    namespaces.default_signals()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    config, _ = recv_message(0)
    listener = socket.socket(fileno=int(config['listen_fd']))
    listener.set_inheritable(False)  # no warm parent holds it
    if config.get('slot_fd') is not None:
        os.set_inheritable(int(config['slot_fd']), False)  # the slot's claim: held, never inherited
    try:
        host = Host(config)
        if config.get('warm', True) and host.prep.scientific:
            host.parents.lineage(SCIENTIFIC).start_background()
        host.groups.refill()
    except Exception as exc:
        logger.exception('the session host could not start')
        send_message(1, {'ok': False, 'error': f'{type(exc).__name__}: {exc}'})
        return 1
    send_message(1, host.status())
    gc.collect()
    threading.Thread(target=host.maintain, name='maintain', daemon=True).start()
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=host.serve_connection, args=(conn,), daemon=True).start()


if __name__ == '__main__':
    sys.exit(main())
