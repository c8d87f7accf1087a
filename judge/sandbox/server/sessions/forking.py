"""Forking a frozen live session into ``n`` independent ones, and checking from outside that they are.

The parent's process forks the children itself (`judge.sandbox.zygote.branch`): a fork of a warm
interpreter is cheap, and each child starts with the parent's whole state.  What a fork would share
between the copies is taken away: each child gets its own control socket, pipes, cgroups, container
(a copy of the parent's work dir) and Landlock layer; descriptors that would be shared channels are
closed or opened again from the copy, shared mappings made private; the parent moves into a new
Landlock domain.  The process does this itself, so none of it is trusted: `check_child` and
`check_parent` then look at each process from outside, frozen (its cgroup holds only it, its
descriptors are only its own, no shared mapping), and a child that fails is killed (the caller makes
it again by replay).  A fork needs one more Landlock layer on each side; past `process.LAYERS_MAX`,
or without Landlock's scopes (ABI 6), there is no process fork: `fork_live` returns no child.
"""

from __future__ import annotations

import os
import signal
import socket
import stat
import time
from typing import Any

from judge.sandbox.kernel.procmaps import shared_mappings
from judge.sandbox.lazylog import get_logger
from judge.sandbox.server.sessions.cgroup import Groups
from judge.sandbox.server.sessions.primed import Primed
from judge.sandbox.server.sessions.process import LAYERS_MAX, Live, ready
from judge.sandbox.server.sessions.space import Spaces, copy_tree

logger = get_logger('judge.sandbox.server.sessions.forking')

READY_S = 10.0
_DEVICES = {(1, 3), (1, 5), (1, 7), (1, 8), (1, 9)}
"""Character devices a copy may share: null, zero, full, random, urandom (no state to pass on)."""


def plan(pid: int, workdir: str) -> dict[str, Any]:
    """From the frozen parent: which descriptors each child opens again, closes, and which mappings
    it makes private (`judge.sandbox.zygote.branch`)."""
    reopen, close = [], []
    for name in os.listdir(f'/proc/{pid}/fd'):
        fd = int(name)
        if fd <= 3:
            continue
        try:
            target = os.readlink(f'/proc/{pid}/fd/{fd}')
            st = os.stat(f'/proc/{pid}/fd/{fd}')
            info = _fdinfo(pid, fd)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and target.startswith(workdir + '/'):
            reopen.append((fd, os.path.relpath(target, workdir), info.get('flags', 0), info.get('pos', 0)))
        elif not (stat.S_ISCHR(st.st_mode) and _device(st) in _DEVICES):
            close.append(fd)
    return {'reopen': reopen, 'close': close, 'maps': shared_mappings(pid)}


def _device(st: os.stat_result) -> tuple[int, int]:
    return os.major(st.st_rdev), os.minor(st.st_rdev)


def _fdinfo(pid: int, fd: int) -> dict[str, int]:
    found = {}
    with open(f'/proc/{pid}/fdinfo/{fd}', encoding='ascii') as f:
        for line in f:
            key, _, value = line.partition(':')
            if key in ('pos', 'flags'):
                found[key] = int(value.strip(), 8 if key == 'flags' else 10)
    return found


def fork_live(parent: Live, sids: list[str], spaces: Spaces, groups: Groups, scoped: bool) -> list[Live | None]:
    """Fork the frozen ``parent`` into one new live session per id (None for each child that could not
    be made or failed its check); the parent is frozen again on return."""
    if not scoped or parent.layers + 1 > LAYERS_MAX or parent.group.pids() != [parent.pid]:
        return [None] * len(sids)
    the_plan = plan(parent.pid, parent.workdir)
    made: list[dict[str, Any]] = []
    send_fds: list[int] = []
    for sid in sids:
        host, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        container, workdir = spaces.new_member(parent.family, parent.container)
        copy_tree(parent.workdir, workdir, parent.family.uid)
        made.append(
            {
                'sid': sid,
                'host': host,
                'fds': [out_r, err_r],
                'ids': {_ident(theirs.fileno()), _ident(out_w), _ident(err_w)},
                'container': container,
                'workdir': workdir,
            }
        )
        send_fds += [theirs.detach(), out_w, err_w]
    relayer = spaces.layer(parent.container)
    parent.group.set_cpus(0)  # the forks are made in the parent's cgroups: on every CPU, not within its quota
    primed = Primed(parent.group.dirs['pids'], parent.pid)  # the children's moves start in a grace period
    try:
        parent.freeze(False)
        try:
            parent.send({'op': 'fork', 'n': len(sids), **the_plan}, [*send_fds, relayer])
        finally:
            for fd in [*send_fds, relayer]:
                os.close(fd)
        try:
            for entry in made:  # while the session forks: what each child is given once it exists
                entry['group'] = groups.take(parent.group.memory_mb)
                entry['layer'] = spaces.layer(entry['container'])
        except OSError:  # the children left without them are killed as they report (`_adopt`)
            logger.exception('session %s: could not prepare its forks', parent.sid)
        children = _adopt(parent, made, spaces, primed)
        parent.freeze()
    finally:
        primed.stop()
        parent.group.set_cpus(groups.defaults[2])
    parent.layers += 1
    parent.forks += [c.pid for c in children if c is not None]
    leaked = {i for m in made for i in m['ids']}
    if not check_parent(parent, leaked):
        logger.error('session %s kept what its forks were given: the forks are discarded', parent.sid)
        for child in children:
            if child is not None:
                discard(child, spaces)
        return [None] * len(sids)
    return children


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _ident(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _adopt(parent: Live, made: list[dict[str, Any]], spaces: Spaces, primed: Primed) -> list[Live | None]:
    """Collect the children's pids (``P``, from the parent and the children that fork others), move them
    all into their cgroups (while ``primed``, then stop it) and send each its place; then, as each answers
    ``R``, freeze and check it.  (Moving a process between cgroups waits for every fork in progress, so
    it starts once the forks are made.)"""
    deadline = time.monotonic() + READY_S
    pids = _forked_pids(parent, len(made), deadline)
    children: list[Live | None] = [None] * len(made)
    for i, pid in sorted(pids.items()):
        if 'layer' in made[i]:
            made[i]['group'].join(pid)
    primed.stop()
    for i, pid in sorted(pids.items()):
        if 'layer' in made[i]:
            children[i] = _start_child(parent, made[i], pid, spaces)
        else:  # not prepared: still in the parent's cgroups, given nothing
            _kill(pid)
    pending = {c.sock.fileno(): i for i, c in enumerate(children) if c is not None}
    answered: list[int] = []
    while pending and time.monotonic() < deadline:
        for fd in ready(list(pending), deadline - time.monotonic()):
            i = pending.pop(fd)
            child = children[i]
            assert child is not None
            if child.recv(0) == b'R':
                child.group.freeze(True, wait=False)  # all freeze together; checked once they all have
                answered.append(i)
                continue
            discard(child, spaces)
            children[i] = None
    for i in answered:
        child = children[i]
        assert child is not None
        if not child.group.freeze(True) or not check_child(child, made[i]['ids']):
            logger.error('fork %s of session %s failed its check', child.sid, parent.sid)
            discard(child, spaces)
            children[i] = None
    _clean_up(parent, made, children, set(pending), spaces)
    return children


def _clean_up(
    parent: Live,
    made: list[dict[str, Any]],
    children: list[Live | None],
    silent: set[int],
    spaces: Spaces,
) -> None:
    """Release what the children never started were given (one forked but not prepared was killed in
    `_adopt`); discard the children that never answered."""
    for i, entry in enumerate(made):
        child = children[i]
        if child is None and not entry.get('started'):
            if 'layer' in entry:
                os.close(entry.pop('layer'))
            entry['host'].close()
            for fd in entry['fds']:
                os.close(fd)
            if 'group' in entry:
                entry['group'].remove()
            spaces.drop_member(parent.family, entry['container'])
        elif child is not None and child.sock.fileno() in silent:
            discard(child, spaces)
            children[i] = None


def _forked_pids(parent: Live, n: int, deadline: float) -> dict[int, int]:
    """Index -> pid of each fork reported (``P``) until the parent is done (``F``) and all ``n`` are in."""
    pids: dict[int, int] = {}
    done = False
    while (not done or len(pids) < n) and time.monotonic() < deadline:
        data = parent.recv(deadline - time.monotonic())
        if data[:1] == b'P' and len(data) == 9:
            index, pid = int.from_bytes(data[1:5], 'big'), int.from_bytes(data[5:], 'big')
            if 0 <= index < n:
                pids[index] = pid
        elif data == b'F':
            done = True
        elif not data:
            break
    return pids


def _start_child(parent: Live, entry: dict[str, Any], pid: int, spaces: Spaces) -> Live:
    """The new child's handle (in its cgroups already): its work dir and Landlock layer on its own socket."""
    child = Live(
        entry['sid'],
        pid,
        [entry['host'].detach(), *entry['fds']],
        entry['group'],
        parent.family,
        entry['container'],
        entry['workdir'],
    )
    child.layers, child.kind, child.count, child.ttl_s = parent.layers + 1, parent.kind, parent.count, parent.ttl_s
    layer = entry.pop('layer')
    entry['started'] = True
    try:
        child.send({'workdir': entry['workdir']}, [layer])
    finally:
        os.close(layer)
    return child


def check_child(child: Live, own: set[tuple[int, int]]) -> bool:
    """Whether the frozen ``child`` is alone in its cgroups, holds no descriptor but its own (its pipes
    and socket, files of its work dir, stateless devices) and maps nothing shared."""
    if child.group.pids() != [child.pid]:
        return False
    base = f'/proc/{child.pid}/fd'
    for name in os.listdir(base):
        path = f'{base}/{name}'
        try:
            st, target = os.stat(path), os.readlink(path)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in own:
            continue
        if stat.S_ISREG(st.st_mode) and target.startswith(child.workdir + '/'):
            continue
        if stat.S_ISCHR(st.st_mode) and _device(st) in _DEVICES:
            continue
        return False
    return not shared_mappings(child.pid)


def check_parent(parent: Live, given: set[tuple[int, int]]) -> bool:
    """Whether the frozen parent is alone in its cgroups and kept none of the children's descriptors."""
    if parent.group.pids() != [parent.pid]:
        return False
    base = f'/proc/{parent.pid}/fd'
    for name in os.listdir(base):
        try:
            st = os.stat(f'{base}/{name}')
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in given:
            return False
    return True


def discard(live: Live, spaces: Spaces) -> None:
    """Kill a session and remove what it had (its cgroups, its work dir)."""
    live.close()
    live.group.remove()
    spaces.drop_member(live.family, live.container)
