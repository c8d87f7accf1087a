"""Forking live sessions in a real session host: the children start from the parent's state and share
nothing with it or with each other (files, descriptors, mappings, signals, sockets), and a child that
kept what it shared is caught from outside."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from judge.sandbox.sessionclient import SessionClient
from tests.support.processes.sessions import cell, open_host, value

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason='live sessions need root (cgroups, uids)')


@pytest.fixture(scope='module')
def host() -> Iterator[SessionClient]:
    with open_host('forks') as client:
        yield client


def create(client: SessionClient, sid: str, **spec: object) -> None:
    reply, _ = client.request({'op': 'create', 'sid': sid, **spec})
    assert reply.get('ok'), reply


def fork(client: SessionClient, sid: str, children: list[str]) -> list[bool]:
    reply, _ = client.request({'op': 'fork', 'sid': sid, 'children': children})
    assert reply.get('ok'), reply
    return [c['live'] for c in reply['children']]


def test_children_start_from_the_parents_state(host: SessionClient) -> None:
    create(host, 'p')
    value(host, 'p', 'import sympy as sp\nx = sp.Symbol("x")\nacc = [0]\nopen("log.txt", "w").write("p")')
    kids = [f'p{i}' for i in range(8)]
    assert fork(host, 'p', kids) == [True] * 8
    for i, kid in enumerate(kids):
        assert value(host, kid, f'acc.append({i}); open("log.txt", "a").write("{i}"); sp.expand((x + {i})**2)')
    for i, kid in enumerate(kids):
        assert value(host, kid, '(acc, open("log.txt").read())') == f"([0, {i}], 'p{i}')"
    assert value(host, 'p', '(acc, open("log.txt").read())') == "([0], 'p')"
    info, _ = host.request({'op': 'info', 'sid': 'p3'})
    assert info['live'] and info['pid_count'] == 1 and info['count'] == 3


def test_open_files_are_the_childs_own_copies(host: SessionClient) -> None:
    create(host, 'files', kind='lean')
    value(host, 'files', 'f = open("data.txt", "w+")\nf.write("0123456789"); f.flush(); f.seek(4)')
    assert fork(host, 'files', ['fa', 'fb']) == [True, True]
    assert value(host, 'fa', 'f.write("A"); f.flush(); f.tell()') == '5'
    assert value(host, 'fb', 'f.tell(), f.read()') == "(4, '456789')"  # its own offset, its own content
    assert value(host, 'files', 'f.seek(0); f.read()') == "'0123456789'"


def test_siblings_and_parent_cannot_reach_each_other(host: SessionClient) -> None:
    create(host, 'root', kind='lean')
    setup = (
        'import os, socket, mmap, signal, errno\n'
        'pair = socket.socketpair()\n'
        'shared = mmap.mmap(-1, 4096)\n'
        'home = os.getcwd()\n'
        'open("secret.txt", "w").write("parent-only")\n'
        'parent_pid = os.getpid()\n'
        'def attempt(fn):\n'
        '    try:\n'
        '        return ("OK", fn())\n'
        '    except OSError as e:\n'
        '        return errno.errorcode.get(e.errno, str(e.errno))\n'
    )
    value(host, 'root', setup)
    assert fork(host, 'root', ['sa', 'sb']) == [True, True]
    # sa plants what sb would find: a message on the pre-fork socketpair, a byte in the shared mapping,
    # an abstract socket, its pid
    planted = value(
        host, 'sa', '(attempt(lambda: pair[0].send(b"hi")), attempt(lambda: shared.__setitem__(0, 65)), os.getpid())'
    )
    assert planted.startswith("('EBADF', ('OK', None), ")  # the socketpair was closed in the child
    value(host, 'sa', 'listener = socket.socket(socket.AF_UNIX); listener.bind("\\0judge-sibling"); listener.listen(1)')
    sa_pid = int(planted.rsplit(', ', 1)[1].rstrip(')'))
    got = value(
        host,
        'sb',
        '(attempt(lambda: pair[1].recv(10)), shared[0],'
        ' attempt(lambda: socket.socket(socket.AF_UNIX).connect("\\0judge-sibling")),'
        f' attempt(lambda: os.kill({sa_pid}, signal.SIGKILL)), attempt(lambda: os.kill(parent_pid, signal.SIGKILL)),'
        ' attempt(lambda: open(os.path.join(home, "secret.txt")).read()),'
        ' sorted(p for p in os.listdir("/proc") if p.isdigit()) == [str(os.getpid())])',
    )
    # Landlock's scopes refuse the sibling's abstract socket and signals (EPERM; ESRCH where a pid is not even
    # visible); its layer refuses the parent's files; /proc shows each copy only itself
    assert got == "('EBADF', 0, 'EPERM', 'EPERM', 'EPERM', 'EACCES', True)", got
    # the parent cannot reach its children either
    got = value(host, 'root', f'(attempt(lambda: os.kill({sa_pid}, signal.SIGKILL)), shared[0])')
    assert got in ("('ESRCH', 0)", "('EPERM', 0)"), got
    assert value(host, 'sa', 'shared[0]') == '65'


def test_a_child_that_kept_a_shared_descriptor_is_caught(host: SessionClient) -> None:
    """The parent's own code can subvert the fork's clean-up (it runs in the parent's process); the host's
    check from outside then discards the children, which the worker rebuilds by replay."""
    create(host, 'sly', kind='lean')
    tamper = (
        'import os, socket, sys, types\n'
        'pair = socket.socketpair()\n'
        'keep = {pair[0].fileno(), pair[1].fileno()}\n'
        'frame = sys._getframe()\n'
        'while "fork_children" not in frame.f_globals:\n'
        '    frame = frame.f_back\n'
        'fake = types.SimpleNamespace(**vars(os))\n'
        'fake.close = lambda fd, _close=os.close: None if fd in keep else _close(fd)\n'
        'frame.f_globals["fork_children"].__globals__["os"] = fake\n'
    )
    value(host, 'sly', tamper)
    assert fork(host, 'sly', ['s1', 's2']) == [False, False]
    assert not host.request({'op': 'info', 'sid': 's1'})[0]['live']
    assert value(host, 'sly', 'len(keep)') == '2'  # the parent itself goes on


def test_a_session_with_other_processes_is_not_forked_as_a_process(host: SessionClient) -> None:
    create(host, 'busy', kind='lean')
    value(host, 'busy', 'import subprocess\nchild = subprocess.Popen(["sleep", "30"])')
    assert fork(host, 'busy', ['b1']) == [False]
    reply, _, _ = cell(host, 'busy', 'child.kill(); child.wait()')
    assert reply['status'] == 0
