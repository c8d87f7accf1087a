"""Slots heal themselves, and only deterministic compile failures are cached (issue 17, classes 3 and 8).

Real slot servers and real compilers, without Celery (the attack suite in tests/attacks/ drives the same
behaviour through the whole stack).
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
from judge.runtime import submission_python
from judge.sandbox.client import ExecRequest, ExecResult, SandboxError, SlotClient
from judge.settings import Settings
from tests.slots import RUN_LIMITS, open_slot

PYTHON = submission_python(Settings())
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
    """A "compiler" that needs more processes than the slot has: a resource failure, every time."""

    language = 'forking'
    source_name = 'source.txt'
    compile_argv = (PYTHON, '-c', 'import os, time\nwhile os.fork():\n    pass\ntime.sleep(5)\n')
    run_argv = ('/bin/true',)
    version_argv: ClassVar[tuple[str, ...]] = ()


class _HungryCompiler(_ForkingCompiler):
    """A "compiler" that needs more memory than its limit: killed by the slot's memory cgroup."""

    language = 'hungry'
    compile_argv = (PYTHON, '-c', 'x = bytearray(2 << 30)')


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
    # out of processes: compiled twice, then an infrastructure error; nothing cached
    forking = _ForkingCompiler(toolchain, slot)
    with pytest.raises(SandboxError, match='not because of the source'):
        forking.compile('anything')  # twice: once more in the cleaned slot
    assert _artifact_record(forking, 'anything') is None
    # past the memory limit: the same; past the time limit: at once (twice would not fit in a task)
    hungry = _HungryCompiler(toolchain, slot)
    with pytest.raises(SandboxError, match='exceeded 1024 MiB'):
        hungry.compile('anything')
    assert _artifact_record(hungry, 'anything') is None
    slow = _CountingCpp(Toolchain(python=PYTHON, cxx=CXX, cache_dir=cache_dir, compile_time_s=0.05), slot)
    source = '#include <iostream>\nint main() { std::cout << 1; }\n'
    with pytest.raises(SandboxError, match='exceeded 0.05s'):
        slow.compile(source)
    assert slow.runs == 1 and _artifact_record(slow, source) is None
    ok = cpp.compile(source)  # the same source compiles under the normal limits
    assert ok is not None and ok.ok and not ok.cached


def test_without_cgroups_no_compile_failure_is_cached(cache_dir: str) -> None:
    for client in _client(cache_dir, tier='uid'):
        executor = CExecutor(Toolchain(python=PYTHON, cxx=CXX, cache_dir=cache_dir), client)
        failed = executor.compile('int main( {')
        assert failed is not None and not failed.ok and not failed.cacheable  # no accounting: cannot vouch
        assert _artifact_record(executor, 'int main( {') is None
