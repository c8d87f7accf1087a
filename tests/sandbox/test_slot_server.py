"""A slot server's executions (no Celery): the wall limit and its kill policy, output bounds, bytes in and
out, the slot uid, rlimits, file names."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator

import pytest

from judge.sandbox.client import ExecRequest, SandboxError, SlotClient
from tests.support.processes.slots import PYTHON, RUN_LIMITS, open_slot


@pytest.fixture(scope='module')
def slot() -> Iterator[SlotClient]:
    with open_slot('sandbox', allow_unsafe=os.getuid() != 0) as client:
        yield client


@pytest.mark.parametrize('mode', ['warm', 'fresh'])
def test_wall_limit_kills_everything(slot: SlotClient, mode: str) -> None:
    tag = f'{2000 + os.getpid() % 1000}.25'
    src = (
        f'import subprocess, time\nsubprocess.Popen(["sleep", "{tag}"], start_new_session=True)\n'
        f'subprocess.Popen(["sleep", "{tag}"])\ntime.sleep(60)'
    )
    start = time.monotonic()
    r = slot.run(
        ExecRequest(limits=RUN_LIMITS._replace(time_s=1.0), python_source=src)
        if mode == 'warm'
        else ExecRequest(
            limits=RUN_LIMITS._replace(time_s=1.0), argv=[PYTHON, '-I', 'source.py'], files={'source.py': src}
        )
    )
    assert r.timed_out and r.exit_code == -9
    assert time.monotonic() - start < 3
    if os.getuid() == 0:  # the uid sweep also gets setsid daemons; without root only the group dies
        assert subprocess.run(['pgrep', '-f', f'sleep {tag}'], capture_output=True).stdout == b''


@pytest.mark.parametrize('mode', ['warm', 'fresh'])
def test_a_busy_loop_gets_its_whole_time_limit(slot: SlotClient, mode: str) -> None:
    """The CPU rlimit is a backstop above the wall limit: the CPU a spare spent before its plan does not
    end a CPU-bound program before its time (an integer limit once ended it a few ms short)."""
    src = 'print("started", flush=True)\nwhile True: pass'
    limits = RUN_LIMITS._replace(time_s=1.0)
    r = slot.run(
        ExecRequest(limits=limits, python_source=src)
        if mode == 'warm'
        else ExecRequest(limits=limits, argv=[PYTHON, '-I', 'source.py'], files={'source.py': src})
    )
    assert r.timed_out and r.stdout == b'started\n', r
    assert r.exit_code == -9, 'ended by the wall limit, not by SIGXCPU'
    assert r.wall_s >= 1.0, r.wall_s


def test_output_is_bounded_while_reading(slot: SlotClient) -> None:
    src = 'import sys\nwhile True: sys.stdout.write("x" * 65536)'
    r = slot.run(
        ExecRequest(limits=RUN_LIMITS._replace(time_s=5, output_bytes=2_000_000, capture_bytes=1000), python_source=src)
    )
    assert r.output_exceeded and not r.timed_out
    assert len(r.stdout) == 1000
    assert 2_000_000 < r.stdout_bytes < 3_000_000


def test_non_utf8_output_survives(slot: SlotClient) -> None:
    r = slot.run(ExecRequest(limits=RUN_LIMITS, python_source='import sys\nsys.stdout.buffer.write(b"\\xff\\x00ok")'))
    assert r.stdout == b'\xff\x00ok' and r.exit_code == 0


def test_stdin_larger_than_a_pipe_buffer(slot: SlotClient) -> None:
    data = b'7\n' * 500_000
    r = slot.run(
        ExecRequest(limits=RUN_LIMITS, python_source='import sys\nprint(len(sys.stdin.buffer.read()))', stdin=data)
    )
    assert r.stdout == b'1000000\n'


def test_runs_as_unprivileged_slot_uid(slot: SlotClient) -> None:
    r = slot.run(
        ExecRequest(limits=RUN_LIMITS, python_source='import os\nprint(os.getuid(), os.getgid(), os.getgroups())')
    )
    if os.getuid() == 0:
        uid = slot.detail['uid']
        assert r.stdout.decode().split(maxsplit=2) == [str(uid), str(uid), '[]\n']


def test_rlimits_cannot_be_raised(slot: SlotClient) -> None:
    src = (
        'import resource\nsoft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n'
        'try:\n    resource.setrlimit(resource.RLIMIT_NOFILE, (hard * 2, hard * 2))\n    print("raised")\n'
        'except ValueError:\n    print("refused")'
    )
    r = slot.run(ExecRequest(limits=RUN_LIMITS, python_source=src))
    assert r.stdout == b'refused\n'


def test_bad_file_names_are_refused(slot: SlotClient) -> None:
    with pytest.raises(SandboxError, match='bad file name'):
        slot.run(ExecRequest(limits=RUN_LIMITS, argv=['/bin/true'], files={'../escape': 'x'}))
    # the slot keeps working afterwards
    assert slot.run(ExecRequest(limits=RUN_LIMITS, python_source='print(1)')).stdout == b'1\n'


def test_the_server_says_where_its_cpu_went_when_asked(slot: SlotClient) -> None:
    """`scripts.sandbox_cost --phases`: with ``phase_costs`` the server charges its CPU to the phases of
    each execution (from zero after each question); without, it keeps nothing."""
    request = ExecRequest(limits=RUN_LIMITS._replace(time_s=5), python_source='print(6 * 7)')
    with open_slot('phases', allow_unsafe=os.getuid() != 0, extra={'phase_costs': True}) as timed:
        timed.run(request)
        timed.phase_costs()
        for _ in range(5):
            assert timed.run(request).stdout == b'42\n'
        taken = timed.phase_costs()
        again = timed.phase_costs()
    assert taken['executions'] == 5, taken
    spent = taken['ns']
    assert {'receive', 'execute', 'send', 'workdir', 'fork', 'settle', 'drop'} <= set(spent), spent
    assert all(ns >= 0 for ns in spent.values()) and spent['execute'] > 0, spent
    if timed.tier == 'namespaces':
        assert spent['workdir: tmpfs'] > 0, spent
    assert again['executions'] == 0 and sum(again['ns'].values()) < sum(spent.values()), again
    slot.run(request)
    assert slot.phase_costs() == {'executions': 0, 'ns': {}}
