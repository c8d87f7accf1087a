"""Slots heal themselves, and only deterministic compile failures are cached.

Real slot servers and real compilers, without Celery: a server that keeps dying, one death retried
transparently, a zygote that dies, and the compile policy (the attack suite in tests/system/attacks/
drives the same behaviour through the whole stack: test_healing.py and test_compile.py there).
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from judge.executors import CExecutor, CppExecutor, Toolchain, cache
from judge.executors.compiled import CompiledExecutor
from judge.sandbox.client import ExecRequest, ExecResult, SandboxError, SlotClient, SlotConfig
from judge.sandbox.slots import claim_slot
from tests.support.processes.slots import PYTHON, RUN_LIMITS, open_slot

CXX = os.path.realpath(shutil.which('g++') or '/usr/bin/g++')
pytestmark = pytest.mark.skipif(os.getuid() != 0, reason='the isolated tiers need root')


@pytest.fixture
def cache_dir(tmp_path: Path) -> str:
    path = tmp_path / 'cache'
    (path / 'pch').mkdir(parents=True)
    return str(path)


def _client(cache_dir: str, tier: str = 'namespaces', **extra: object) -> Iterator[SlotClient]:
    config = {'pids': 64, 'keep_writable': [cache_dir], 'read_paths': [f'{cache_dir}/pch'], **extra}
    with open_slot('heal', tier=tier, extra=config) as client:
        yield client


@pytest.fixture
def slot(cache_dir: str) -> Iterator[SlotClient]:
    yield from _client(cache_dir)


def test_a_request_whose_server_keeps_dying_is_an_infrastructure_error_after_the_retries(slot: SlotClient) -> None:
    stop = threading.Event()
    killed: list[int] = []

    def killer() -> None:  # kills every server of this slot while the request runs
        while not stop.is_set():
            pid = slot.server_pid
            if pid is not None and pid not in killed:
                time.sleep(0.3)
                killed.append(pid)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)

    thread = threading.Thread(target=killer)
    thread.start()
    try:
        with pytest.raises(SandboxError, match='3 attempts'):
            slot.run(
                ExecRequest(limits=RUN_LIMITS._replace(time_s=5), python_source='import time\ntime.sleep(2)\nprint(1)')
            )
    finally:
        stop.set()
        thread.join()
    assert len(killed) >= 3 and slot.restarts >= 2, (killed, slot.restarts)
    result = slot.run(ExecRequest(limits=RUN_LIMITS._replace(time_s=5), python_source='print(6 * 7)'))
    assert (result.exit_code, result.stdout) == (0, b'42\n')  # and the slot heals at once


def test_a_request_caught_by_one_server_death_is_retried_transparently(slot: SlotClient) -> None:
    victim = slot.server_pid
    assert victim is not None
    timer = threading.Timer(0.5, os.kill, (victim, signal.SIGKILL))
    timer.start()
    result = slot.run(
        ExecRequest(limits=RUN_LIMITS._replace(time_s=5), python_source='import time\ntime.sleep(1.5)\nprint(7)')
    )
    timer.join()
    assert (result.exit_code, result.stdout) == (0, b'7\n') and slot.restarts == 1 and slot.server_pid != victim


class _ForkingCompiler(CompiledExecutor):
    """A "compiler" that needs more processes than the slot has: a resource failure, every time (its control
    program too: a node that cannot compile)."""

    language = 'forking'
    source_name = 'source.txt'
    compile_argv = (PYTHON, '-c', 'import os, time\nwhile os.fork():\n    pass\ntime.sleep(5)\n')
    run_argv = ('/bin/true',)
    version_argv: ClassVar[tuple[str, ...]] = ()
    control_source = 'fine\n'


class _HungryCompiler(_ForkingCompiler):
    """A "compiler" that needs more memory than its limit: killed by the slot's memory cgroup."""

    language = 'hungry'
    compile_argv = (PYTHON, '-c', 'x = bytearray(2 << 30)')


class _PickyCompiler(_ForkingCompiler):
    """A "compiler" that runs out of memory on a source saying BOMB and builds any other."""

    language = 'picky'
    compile_argv = (
        PYTHON,
        '-c',
        'import sys\nif "BOMB" in open(sys.argv[1]).read():\n    x = bytearray(2 << 30)\n'
        'open(sys.argv[2], "w").write("ok")\n',
        '{src}',
        '{out}',
    )


class _CountingCpp(CppExecutor):
    """The C++ executor, counting the executions it sends to the slot."""

    runs = 0

    def execute(self, request: ExecRequest) -> ExecResult:
        self.runs += 1
        return super().execute(request)


def _artifact_record(executor: CompiledExecutor, source: str) -> dict[str, object] | None:
    return cache.read_record(executor.cache_path(executor.language, *executor.compile_key(source)))


def test_compile_policy_only_caches_what_the_source_decides(slot: SlotClient, cache_dir: str) -> None:
    toolchain = Toolchain(python=PYTHON, cxx=CXX, cache_dir=cache_dir)
    cpp = CppExecutor(toolchain, slot)
    # a diagnostic: cached, whatever its text says
    lie = '#error Resource temporarily unavailable\n'
    first = cpp.compile(lie)
    assert first is not None and not first.ok and first.cacheable and not first.cached
    again = cpp.compile(lie)
    assert again is not None and again.cached and again.stderr == first.stderr
    # out of processes for every program, the control too: compiled twice, then an infrastructure error
    forking = _ForkingCompiler(toolchain, slot)
    with pytest.raises(SandboxError, match='and so did a control'):
        forking.compile('anything')  # twice: once more in the cleaned slot
    assert _artifact_record(forking, 'anything') is None
    # past the memory limit: the same; past the time limit: at once (twice would not fit in a task)
    hungry = _HungryCompiler(toolchain, slot)
    with pytest.raises(SandboxError, match='and so did a control'):
        hungry.compile('anything')
    assert _artifact_record(hungry, 'anything') is None
    slow = _CountingCpp(Toolchain(python=PYTHON, cxx=CXX, cache_dir=cache_dir, compile_time_s=0.05), slot)
    source = '#include <iostream>\nint main() { std::cout << 1; }\n'
    with pytest.raises(SandboxError, match='and so did a control'):
        slow.compile(source)
    assert slow.runs == 2 and _artifact_record(slow, source) is None  # no second try: the control
    ok = cpp.compile(source)  # the same source compiles under the normal limits
    assert ok is not None and ok.ok and not ok.cached


def test_a_source_that_breaks_the_compiler_gets_a_compile_error_naming_the_limit(
    slot: SlotClient, cache_dir: str
) -> None:
    picky = _PickyCompiler(Toolchain(python=PYTHON, cxx=CXX, cache_dir=cache_dir), slot)
    bomb = picky.compile('BOMB')
    assert not bomb.ok and not bomb.cacheable and bomb.stderr.startswith(b'compilation exceeded the memory limit')
    assert _artifact_record(picky, 'BOMB') is None
    fine = picky.compile('fine')
    assert fine.ok and not fine.cached


def test_without_cgroups_no_compile_failure_is_cached(cache_dir: str) -> None:
    for client in _client(cache_dir, tier='uid'):
        executor = CExecutor(Toolchain(python=PYTHON, cxx=CXX, cache_dir=cache_dir), client)
        failed = executor.compile('int main( {')
        assert failed is not None and not failed.ok and not failed.cacheable  # no accounting: cannot vouch
        assert _artifact_record(executor, 'int main( {') is None


def _spare_parent(root_pid: int) -> int:
    """The pid of the process that forked the waiting spare: the slot's zygote."""
    deadline = time.monotonic() + 5
    while True:
        found = _find_spare_parent(root_pid)
        if found is not None:
            return found
        assert time.monotonic() < deadline, f'no spare below {root_pid}'
        time.sleep(0.05)


def _find_spare_parent(root_pid: int) -> int | None:
    todo, found = [root_pid], []
    while todo:
        pid = todo.pop()
        try:
            with open(f'/proc/{pid}/task/{pid}/children') as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            continue
        todo.extend(kids)
        found.extend(kids)
    for pid in found:
        try:
            with open(f'/proc/{pid}/status') as f:
                fields = dict(line.split(':', 1) for line in f.read().splitlines() if ':' in line)
        except OSError:
            continue
        if int(fields['Uid'].split()[0]) != 0:  # the spare has dropped to the slot's uid
            return int(fields['PPid'])
    return None


@pytest.mark.skipif(os.getuid() != 0, reason='the isolated tiers need root')
def test_a_dead_zygote_costs_no_submission() -> None:
    index, lock_fd = claim_slot()
    client = SlotClient(
        SlotConfig(
            slot=index,
            python=PYTHON,
            memory_mb=RUN_LIMITS.memory_mb,
            pids=RUN_LIMITS.pids,
            work_root=f'/tmp/judge-test-zygote-{os.getpid()}',
        )
    )
    try:
        client.ensure_started()
        assert client._proc is not None
        first_server = client._proc.pid
        zygote = _spare_parent(first_server)
        assert zygote != first_server
        os.kill(zygote, signal.SIGKILL)
        for n in range(3):
            r = client.run(ExecRequest(limits=RUN_LIMITS._replace(time_s=3), python_source=f'print({n} * 7)'))
            assert r.exit_code == 0 and r.stdout == f'{n * 7}\n'.encode(), r
        # The server either forked a new zygote or exited and was restarted: either way a new zygote.
        assert client._proc is not None
        assert _spare_parent(client._proc.pid) != zygote
    finally:
        client.close()
        os.close(lock_fd)
