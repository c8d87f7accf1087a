"""What a compile failure is (`judge.executors.compiled`): the source's compile error or the node's infrastructure
error, told apart by a control compile; the compile's time within the gateway's wait; the cache's bound."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from judge.executors import CExecutor, Toolchain
from judge.executors.compiled import CONTROL_TTL_S, MIB
from judge.sandbox.client import ExecRequest, ExecResult, SandboxError

SOURCE = 'int main(void) { return 0; }\n/* the submission */\n'


def outcome(exit_code: int | None = 0, sig: int | None = None, wall_s: float = 0.2, **flags: bool) -> ExecResult:
    return ExecResult(
        exit_code=exit_code if sig is None else -sig,
        signal=sig,
        timed_out=flags.get('timed_out', False),
        output_exceeded=flags.get('output_exceeded', False),
        memory_exceeded=flags.get('memory_exceeded', False),
        wall_s=wall_s,
        cpu_s=wall_s,
        max_rss_kb=1024,
        stdout=b'',
        stderr=b'compiler text\n',
        stdout_bytes=0,
        stderr_bytes=14,
        pids_exceeded=flags.get('pids_exceeded', False),
    )


class ScriptedSlot:
    """Answers the submission's compiles with ``script`` and every control compile with ``control``; a
    success writes the exported program, as the slot server does."""

    detail = {'cgroup': 'v2'}

    def __init__(self, script: list[ExecResult], control: ExecResult | None = None) -> None:
        self.script = script
        self.control = control or outcome()
        self.requests: list[ExecRequest] = []

    def run(self, request: ExecRequest) -> ExecResult:
        self.requests.append(request)
        control = any(SOURCE not in text for text in request.files.values())
        result = self.control if control else self.script.pop(0)
        if result.exit_code == 0:
            for path in request.exports.values():
                os.makedirs(os.path.dirname(path), exist_ok=True)
                Path(path).write_bytes(b'\x7fELF program')
        return result


@pytest.fixture
def make(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(CExecutor, 'version', lambda self: 'gcc 12')
    monkeypatch.setattr(CExecutor, 'extra_compile_args', lambda self, source: [])

    def build(script: list[ExecResult], control: ExecResult | None = None, **toolchain: Any) -> tuple[CExecutor, Any]:
        slot = ScriptedSlot(script, control)
        chain = Toolchain(python='/usr/bin/python3', cxx='g++', cache_dir=str(tmp_path / 'cache'), **toolchain)
        return CExecutor(chain, slot), slot  # type: ignore[arg-type]

    return build


def test_a_compile_out_of_time_is_the_sources_compile_error_when_a_control_compiles(make: Any) -> None:
    over = outcome(sig=signal.SIGKILL, wall_s=30.0, timed_out=True)
    executor, slot = make([over, over])
    compiled = executor.compile(SOURCE)
    assert not compiled.ok and not compiled.cacheable
    assert compiled.stderr.startswith(b'compilation exceeded the time limit (30s)\ncompiler text')
    assert len(slot.requests) == 2, 'no second try for a compile out of time; then one control'
    assert executor.compile(SOURCE) is not None and len(slot.requests) == 3, 'never cached: compiled again'


@pytest.mark.parametrize(
    ('result', 'note'),
    [
        (outcome(sig=signal.SIGKILL, memory_exceeded=True), b'compilation exceeded the memory limit (1024 MiB)'),
        (outcome(sig=signal.SIGXFSZ), b'compilation wrote a file larger than 64 MiB'),
        (outcome(sig=signal.SIGSEGV), b'the compiler was killed by signal 11'),
        (outcome(exit_code=4), b'the compiler failed (exit status 4)'),
        (outcome(exit_code=1, pids_exceeded=True), b'compilation exceeded the process limit (64)'),
        (outcome(exit_code=1, output_exceeded=True), b'compilation printed too much'),
    ],
    ids=['memory', 'file_size', 'crash', 'odd_status', 'processes', 'output'],
)
def test_what_the_source_makes_the_compiler_do_is_told_in_the_compile_error(
    make: Any, result: ExecResult, note: bytes
) -> None:
    executor, slot = make([result, result])
    compiled = executor.compile(SOURCE)
    assert not compiled.ok and compiled.stderr.startswith(note)
    assert len(slot.requests) == 3, 'a short failure is tried once more, then a control decides'


def test_a_node_that_cannot_compile_a_control_is_an_infrastructure_error(make: Any) -> None:
    broken = outcome(sig=signal.SIGKILL)
    executor, slot = make([broken, broken], control=broken)
    with pytest.raises(SandboxError, match='and so did a control'):
        executor.compile(SOURCE)
    assert not any(Path(p).exists() for r in slot.requests for p in r.exports.values() if 'control' in p)


def test_a_passed_control_vouches_for_the_node_for_a_while(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    crash = outcome(sig=signal.SIGSEGV)
    executor, slot = make([crash, crash, crash, crash, crash, crash])
    executor.compile(SOURCE)
    executor.compile(SOURCE + '\n')
    assert len(slot.requests) == 5, 'the second failure needs no control of its own'
    now = executor._control_ok_at
    monkeypatch.setattr('time.monotonic', lambda: now + CONTROL_TTL_S + 1)
    executor.compile(SOURCE + '\n\n')
    assert len(slot.requests) == 8, 'a stale pass: another control'


def test_a_second_try_gets_what_the_first_left_of_the_time_limit(make: Any) -> None:
    executor, slot = make([outcome(sig=signal.SIGKILL, wall_s=21.0), outcome(sig=signal.SIGKILL, wall_s=2.0)])
    assert not executor.compile(SOURCE).ok
    assert [r.limits.time_s for r in slot.requests] == [30.0, 9.0, 30.0], 'then the control, with the whole limit'
    executor, slot = make([outcome(sig=signal.SIGKILL, wall_s=29.5)])
    assert not executor.compile(SOURCE).ok
    assert len(slot.requests) == 2, 'nothing left for a second try: the control at once'


def test_a_diagnostic_is_cached_and_needs_no_control(make: Any) -> None:
    executor, slot = make([outcome(exit_code=1)])
    assert not executor.compile(SOURCE).ok and executor.compile(SOURCE).cached
    assert len(slot.requests) == 1


def test_the_compile_leaves_the_run_its_time_within_the_wait(make: Any) -> None:
    executor, slot = make([outcome(), outcome()])
    assert executor.compile(SOURCE, within_s=6.5).ok
    assert slot.requests[0].limits.time_s == 6.5
    executor.compile(SOURCE + '\n', within_s=-3.0)
    assert slot.requests[1].limits.time_s == 1.0, 'never less than a second'
    assert executor.compile_limits.time_s == 30.0


def test_the_cache_keeps_its_bound_before_a_program_is_stored(make: Any, tmp_path: Path) -> None:
    old = tmp_path / 'cache' / 'c' / 'aa'
    old.mkdir(parents=True)
    for i in range(6):
        (old / f'entry{i}').write_bytes(b'x' * (MIB - 64))  # with its record, just under 1 MiB
        (old / f'entry{i}.json').write_text('{"ok": true}')
        os.utime(old / f'entry{i}.json', (i, i))
    executor, _ = make([outcome()], cache_max_mb=5, artifact_max_mb=2)
    assert executor.compile(SOURCE).ok
    left = sorted(p.name for p in old.iterdir() if p.suffix != '.json')
    assert left == ['entry3', 'entry4', 'entry5'], 'the oldest went, leaving room for a 2 MiB program under 5 MiB'
