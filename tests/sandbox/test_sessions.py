"""Live sessions in a real session host (no Celery): cells like a notebook's, limits, freezing, TTL,
replay with recorded seeds, the memory budget."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest

from judge.sandbox.sessionclient import SessionClient
from judge.sandbox.zygote.cell import FLAG_FILE, FLAG_INTERRUPTED, FLAG_RAISED
from tests.support.processes.sessions import cell, host_config, open_host, read, value

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason='live sessions need root (cgroups, uids)')


@pytest.fixture(scope='module')
def host() -> Iterator[SessionClient]:
    with open_host('cells') as client:
        yield client


def create(client: SessionClient, sid: str, **spec: object) -> dict[str, object]:
    reply, _ = client.request({'op': 'create', 'sid': sid, **spec})
    assert reply.get('ok'), reply
    return reply


def test_cells_keep_state_and_answer_like_a_notebook(host: SessionClient) -> None:
    create(host, 'nb', kind='lean')
    assert value(host, 'nb', 'x = 2') is None
    assert value(host, 'nb', 'x + 40') == '42'
    assert value(host, 'nb', '_ + 1') == '43'  # `_` holds the last value, as in Jupyter
    reply, out, _ = cell(host, 'nb', 'print("hi")\nNone')
    assert out == 'hi\n' and reply['value'] is None
    assert value(host, 'nb', 'def f(n):\n    return n * x\nf(5)') == '10'
    assert value(host, 'nb', 'input() + input()', stdin=b'ab\ncd\n') == "'abcd'"
    assert value(host, 'nb', 'import sys; sys.getrecursionlimit()') == '1000'


def test_an_error_is_reported_and_the_session_lives_on(host: SessionClient) -> None:
    create(host, 'err', kind='lean')
    value(host, 'err', 'y = 7')
    reply, out, err = cell(host, 'err', 'print("before")\n1/0')
    assert reply['status'] == 1 and reply['flags'] & FLAG_RAISED and not reply['ended']
    assert out == 'before\n'
    assert 'File "<cell-1>", line 2' in err and err.rstrip().endswith('ZeroDivisionError: division by zero')
    _, _, err = cell(host, 'err', 'z = [1]\nz[5]', style='line')
    assert err == 'IndexError at line 2: list index out of range\n  z[5]\n'
    reply, _, _ = cell(host, 'err', 'raise SystemExit(3)')
    assert reply['status'] == 3 and not reply['ended']
    reply, _, err = cell(host, 'err', 'def (')
    assert reply['status'] == 1 and 'SyntaxError' in err
    assert value(host, 'err', 'y') == '7'


def test_a_cell_over_its_time_is_interrupted_and_the_session_kept(host: SessionClient) -> None:
    create(host, 'slow', kind='lean')
    value(host, 'slow', 'kept = "yes"')
    started = time.monotonic()
    reply, _, err = cell(host, 'slow', 'while True:\n    pass', time_s=1.0)
    assert reply['timed_out'] and reply['flags'] & FLAG_INTERRUPTED and not reply['ended']
    assert 'KeyboardInterrupt' in err and time.monotonic() - started < 3
    assert value(host, 'slow', 'kept') == "'yes'"
    reply, _, _ = cell(
        host, 'slow', 'import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass', time_s=1.0
    )
    assert reply['timed_out'] and reply['ended']
    reply, _ = host.request({'op': 'cell', 'sid': 'slow', 'code': 'kept'}, (b'',))
    assert not reply['ok'] and reply['missing']


def test_memory_and_output_limits(host: SessionClient) -> None:
    create(host, 'mem', kind='lean', memory_mb=128)
    reply, _, _ = cell(host, 'mem', 'blob = bytearray(400 * 1024 * 1024)')
    assert reply['memory_exceeded'] and reply['ended']
    create(host, 'out', kind='lean')
    reply, out, _ = cell(
        host,
        'out',
        'import sys\nwhile True:\n    sys.stdout.write("x" * 65536)',
        output_bytes=300_000,
        capture_bytes=1000,
    )
    assert reply['output_exceeded'] and len(out) == 1000
    assert value(host, 'out', '1 + 1') == '2'


def test_a_session_is_frozen_between_cells(host: SessionClient) -> None:
    """A busy background thread burns no CPU between cells; it runs again during the next cell."""
    create(host, 'frozen', kind='lean')
    spin = 'import threading\ndef spin():\n    while True:\n        pass\n'
    spin += 'threading.Thread(target=spin, daemon=True).start()'
    value(host, 'frozen', spin)
    info, _ = host.request({'op': 'info', 'sid': 'frozen'})
    groups = info['cgroups']
    state = read(os.path.join(groups['freezer'], 'freezer.state')).strip()
    assert state == 'FROZEN'
    usage = os.path.join(groups['cpuacct'], 'cpuacct.usage')
    before = int(read(usage))
    time.sleep(0.5)
    assert int(read(usage)) - before < 20_000_000  # < 20 ms in 0.5 s: nothing runs
    value(host, 'frozen', 'import time\ntime.sleep(0.3)')
    assert int(read(usage)) - before > 100_000_000  # the thread ran while the cell did


def test_one_cell_at_a_time(host: SessionClient) -> None:
    create(host, 'serial', kind='lean')
    value(host, 'serial', 'log = []')
    other = SessionClient(host.config, worker_pid=os.getpid())
    results: dict[str, object] = {}

    def second() -> None:
        results['second'] = cell(other, 'serial', 'log.append("b"); list(log)')[0]['value']

    def first_cell() -> None:
        code = 'import time\nlog.append("a")\ntime.sleep(0.5)\nlist(log)'
        results['first'] = cell(host, 'serial', code)[0]['value']

    first = threading.Thread(target=first_cell)
    first.start()
    time.sleep(0.1)
    thread = threading.Thread(target=second)
    thread.start()
    first.join()
    thread.join()
    other.close()
    # The second cell waited for the first: the first never saw "b", the second saw both.
    # (Which thread records its answer first is up to the scheduler, so answers are keyed.)
    assert results == {'first': "['a']", 'second': "['a', 'b']"}


def test_idle_sessions_expire() -> None:
    with open_host('ttl') as client:
        create(client, 'short', kind='lean', ttl_s=1)
        info, _ = client.request({'op': 'info', 'sid': 'short'})
        freezer = info['cgroups']['freezer']
        deadline, journal, live = time.monotonic() + 10, [], True
        while time.monotonic() < deadline and live:
            reply, _ = client.request({'op': 'info', 'sid': 'short'})
            live, journal = reply['live'], journal + [tuple(j) for j in reply['journal']]
            time.sleep(0.2)
        assert not live and ('short', 'expired') in journal
        assert not os.path.exists(freezer)  # its processes and cgroups are gone


def test_seeded_cells_replay_the_same_values(host: SessionClient) -> None:
    cells = [
        {'code': 'import random\nimport numpy as np\nimport sympy as sp', 'seed': 11},
        {'code': 'a = random.random(); b = np.random.rand(); c = np.random.default_rng().integers(10**9)', 'seed': 12},
        {'code': 'd = str(sp.Dummy()); s = str({"x", "y", "z", "w"})', 'seed': 13},
    ]
    create(host, 'orig', kind='scientific')
    for c in cells:
        value(host, 'orig', c['code'], seed=c['seed'])
    first = value(host, 'orig', '(a, b, c, d, s)')
    create(host, 'copy', kind='scientific', replay=cells)
    assert value(host, 'copy', '(a, b, c, d, s)') == first


def test_replay_flags_what_it_cannot_repeat(host: SessionClient) -> None:
    create(host, 'flags', kind='lean')
    value(host, 'flags', 'open("notes.txt", "w").write("x")')
    reply, _, _ = cell(host, 'flags', 'open("notes.txt").read()')
    assert reply['flags'] & FLAG_FILE


def test_the_memory_budget_evicts_the_least_recently_used() -> None:
    with open_host('budget', budget_mb=40) as client:
        for sid in ('old', 'mid', 'new'):
            create(client, sid, kind='lean')
            value(client, sid, 'ballast = bytearray(15 * 1024 * 1024)')
            time.sleep(2.5)  # the host measures its sessions every 2 s
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and client.request({'op': 'info', 'sid': 'old'})[0]['live']:
            time.sleep(0.5)
        assert not client.request({'op': 'info', 'sid': 'old'})[0]['live']
        assert client.request({'op': 'info', 'sid': 'new'})[0]['live']
        reply, _ = client.request({'op': 'cell', 'sid': 'old', 'code': '1'}, (b'',))
        assert reply['missing']  # the worker rebuilds it by replay (tests/integration/test_sessions.py)


def test_a_host_whose_worker_is_gone_stops_with_its_sessions() -> None:
    worker = subprocess.Popen(['sleep', '600'])  # stands in for the worker process the host watches
    others = set(_children(os.getpid(), 'sessions/host.py'))  # hosts of other tests of this module
    client = SessionClient(host_config('orphan'), worker_pid=worker.pid)
    try:
        client.request({'op': 'ping'})
        outer = [pid for pid in _children(os.getpid(), 'sessions/host.py') if pid not in others]
        host_pids = outer + [pid for parent in outer for pid in _children(parent, 'sessions/host.py')]
        assert host_pids, 'the session host is not running'
        create(client, 'left', kind='lean')
        assert value(client, 'left', 'x = 1; x') == '1'
        info, _ = client.request({'op': 'info', 'sid': 'left'})
        procs = os.path.join(info['cgroups']['pids'], 'cgroup.procs')
        session_pids = [int(p) for p in read(procs).split()]
        assert session_pids, info
    finally:
        worker.kill()
        worker.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not all(_ended(pid) for pid in host_pids):
        time.sleep(0.1)
    client.close()
    assert all(_ended(pid) for pid in host_pids), 'the session host outlived its worker'
    assert all(_ended(pid) for pid in session_pids), 'a session outlived its host'


def _children(parent: int, marker: str) -> list[int]:
    """The processes whose parent is ``parent`` and whose command line holds ``marker``."""
    found = []
    for entry in os.listdir('/proc'):
        try:
            with open(f'/proc/{entry}/stat') as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
            with open(f'/proc/{entry}/cmdline', 'rb') as f:
                cmdline = f.read()
        except (OSError, ValueError):
            continue
        if ppid == parent and marker.encode() in cmdline:
            found.append(int(entry))
    return found


def _ended(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie not yet reaped by its parent counts: here the host is ours)."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0] == 'Z'
    except FileNotFoundError:
        return True
