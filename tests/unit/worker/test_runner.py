"""The runner's verdict logic (`judge.worker.runner.Runner`), driven with hand-built sandbox results.

A stub language (a real `Executor` subclass whose compile outcome and version the test sets) runs in a
stand-in slot that records every `ExecRequest` and answers with a hand-built `ExecResult`: no slot
server, no compiler, no process.  What is checked is the runner's own logic: the verdict and its
precedence, the checker's choice, the compile-error path, the run limits, truncation and the timeout
marker.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from judge.checker import check_tokens
from judge.contracts import RunPayload
from judge.errors import UnsupportedLanguage
from judge.executors import Compiled, Executor, Toolchain
from judge.executors.compiled import CompiledExecutor
from judge.sandbox.client import ExecRequest, ExecResult
from judge.sandbox.limits import Limits
from judge.worker import runner as runner_module
from judge.worker.runner import TIMEOUT_MARKER, Runner, RunnerConfig
from judge.worker.service import run_limits

TOOLCHAIN = Toolchain(python='/usr/bin/python3', cxx='g++', runtime='rt-0123456789ab')
MIB = 1 << 20


def node_config(
    time_s: float = 10.0,
    memory_mb: int = 256,
    output_limit_bytes: int = 16 * MIB,
    file_limit_bytes: int = 16 * MIB,
    pids: int = 64,
    max_chars: int = 1000,
) -> RunnerConfig:
    """The runner's configuration as the worker builds it (`judge.worker.service.run_limits`) from these settings."""
    settings = SimpleNamespace(
        max_execution_time=time_s,
        max_memory=memory_mb,
        output_limit_mb=output_limit_bytes / MIB,
        file_size_limit_mb=file_limit_bytes / MIB,
        pids_limit=pids,
        max_stdout_error_length=max_chars,
    )
    limits = run_limits(settings)  # type: ignore[arg-type]
    limits = limits._replace(output_bytes=int(limits.output_bytes), file_bytes=int(limits.file_bytes))
    return RunnerConfig(limits=limits._replace(capture_bytes=int(limits.capture_bytes)), max_chars=max_chars)


class StubSlot:
    """Stands in for `SlotClient`: answers each request with the next scripted result, keeps the requests."""

    def __init__(self, *results: ExecResult) -> None:
        self.results = list(results)
        self.requests: list[ExecRequest] = []
        self.seeds: list[int | None] = []

    def run(self, request: ExecRequest) -> ExecResult:
        self.requests.append(request)
        return self.results.pop(0)


class StubExecutor(Executor):
    """A language whose compile outcome (`outcome`; None: interpreted) and version are the test's."""

    language = 'stub'
    source_name = 'main.stub'
    run_argv = ('stub-run', '{src}')
    oom_markers = ('stub: out of memory',)
    outcome: ClassVar[Compiled | None] = None
    slot: StubSlot  # type: ignore[assignment]

    def tool(self, name: str) -> str:
        return f'/opt/stub/bin/{name}'  # no lookup on the sandbox's PATH

    def version(self) -> str:
        return 'stub 1.0'

    def compile(self, source: str, within_s: float | None = None) -> Compiled | None:
        return self.outcome

    def run(
        self, source: str, compiled: Compiled | None, stdin: bytes, limits: Limits, seed: int | None = None
    ) -> ExecResult:
        self.slot.seeds.append(seed)
        return super().run(source, compiled, stdin, limits, seed)


class StubCompiledExecutor(CompiledExecutor):
    """The same language, compiled: runs its artifact (`CompiledExecutor.run`)."""

    language = 'stub'
    source_name = 'main.stub'
    compile_argv = ('stub-cc', '{src}', '-o', '{out}')
    run_argv = ('./{out}',)
    oom_markers = ('stub: out of memory',)
    outcome: ClassVar[Compiled | None] = None
    slot: StubSlot  # type: ignore[assignment]

    def version(self) -> str:
        return 'stub 1.0'

    def compile(self, source: str, within_s: float | None = None) -> Compiled | None:
        return self.outcome

    def run(
        self, source: str, compiled: Compiled | None, stdin: bytes, limits: Limits, seed: int | None = None
    ) -> ExecResult:
        self.slot.seeds.append(seed)
        return super().run(source, compiled, stdin, limits, seed)


def done(
    stdout: bytes = b'',
    stderr: bytes = b'',
    exit_code: int | None = 0,
    *,
    timed_out: bool = False,
    output_exceeded: bool = False,
    memory_exceeded: bool = False,
    stdout_bytes: int | None = None,
    stderr_bytes: int | None = None,
) -> ExecResult:
    """What the slot reports for one execution (``*_bytes``: how much the program wrote, default all of it)."""
    return ExecResult(
        exit_code=exit_code,
        signal=None,
        timed_out=timed_out,
        output_exceeded=output_exceeded,
        memory_exceeded=memory_exceeded,
        wall_s=0.25,
        cpu_s=0.2,
        max_rss_kb=2048,
        stdout=stdout,
        stderr=stderr,
        stdout_bytes=len(stdout) if stdout_bytes is None else stdout_bytes,
        stderr_bytes=len(stderr) if stderr_bytes is None else stderr_bytes,
    )


def payload(expected: str | None = None, **extra: Any) -> RunPayload:
    sub: dict[str, Any] = {
        'sub_id': 's1',
        'type': 'stub',
        'solution': 'program',
        'input': '',
        'expected_output': expected,
    }
    return sub | extra  # type: ignore[return-value]


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``judge(sub, *results, compiled=..., checker=..., **RunnerConfig fields)`` -> (result, slot)."""

    def run(
        sub: RunPayload, *results: ExecResult, compiled: Compiled | None = None, checker: Any = None, **config: Any
    ) -> tuple[dict[str, Any], StubSlot]:
        base = StubExecutor if compiled is None else StubCompiledExecutor
        executor = type('Stub', (base,), {'outcome': compiled, 'pids': config.pop('executor_pids', None)})
        monkeypatch.setattr(runner_module, 'EXECUTORS', {'stub': executor})
        slot = StubSlot(*results)
        result = Runner(TOOLCHAIN, slot, node_config(**config)).run(sub, checker)  # type: ignore[arg-type]
        return dict(result), slot

    return run


# --- verdicts --------------------------------------------------------------------------------------


def test_an_output_equal_to_the_expected_one_is_accepted_and_names_what_ran(judge: Any) -> None:
    result, slot = judge(payload('45'), done(b'45\n'))
    assert (result['verdict'], result['success'], result['run_success'], result['reason']) == (
        'accepted',
        True,
        True,
        '',
    )
    assert (result['stdout'], result['stderr'], result['exit_code'], result['cost']) == ('45\n', '', 0, 0.25)
    assert (result['toolchain'], result['runtime']) == ('stub 1.0', 'rt-0123456789ab')
    assert result['compile'] is None and result['compile_cached'] is None  # interpreted: no compile step
    assert not result['stdout_truncated'] and not result['stderr_truncated']
    assert len(slot.requests) == 1


def test_another_output_is_a_wrong_answer(judge: Any) -> None:
    result, _ = judge(payload('46'), done(b'45\n'))
    assert (result['verdict'], result['success'], result['run_success']) == ('wrong_answer', False, True)


def test_without_an_expected_output_any_output_is_accepted(judge: Any) -> None:
    result, _ = judge(payload(None), done(b'anything\n'))
    assert result['verdict'] == 'accepted'


def test_the_checker_is_the_callers_then_the_submissions_then_strip(judge: Any) -> None:
    assert judge(payload('45'), done(b'  45 \n\n'))[0]['verdict'] == 'accepted'  # strip, upstream's rule
    assert judge(payload('45', checker='exact'), done(b'45\n'))[0]['verdict'] == 'wrong_answer'
    assert judge(payload('0.3333', checker='float:1e-3'), done(b'0.3334'))[0]['verdict'] == 'accepted'
    assert judge(payload('4 5', checker='exact'), done(b'4\n  5'), checker=check_tokens)[0]['verdict'] == 'accepted'


def test_a_non_zero_exit_is_a_runtime_error_even_with_the_right_output(judge: Any) -> None:
    result, _ = judge(payload('45'), done(b'45\n', b'Traceback ...', exit_code=1))
    assert (result['verdict'], result['run_success'], result['exit_code']) == ('runtime_error', False, 1)
    assert result['stderr'] == 'Traceback ...'
    assert judge(payload('45'), done(b'44\n', exit_code=-11))[0]['verdict'] == 'runtime_error'  # not wrong_answer


def test_a_timeout_is_a_time_limit_with_upstreams_marker_on_its_own_line(judge: Any) -> None:
    for printed, shown in ((b'partial', 'partial\n'), (b'line\n', 'line\n'), (b'', '')):
        result, _ = judge(payload('partial'), done(printed, exit_code=-9, timed_out=True))
        assert (result['verdict'], result['reason'], result['exit_code']) == ('time_limit', 'worker_timeout', -9)
        assert result['stdout'] == f'{shown}{TIMEOUT_MARKER}\n', printed
        assert result['run_success'] is False
    assert TIMEOUT_MARKER == 'Suicide from timeout.'  # upstream's tests look for this text


def test_the_memory_limit_is_the_cgroups_or_the_runtimes_own_report_of_a_failed_run(judge: Any) -> None:
    assert judge(payload('1'), done(b'', exit_code=-9, memory_exceeded=True))[0]['verdict'] == 'memory_limit'
    oom = b'fatal: stub: out of memory\n'
    assert judge(payload('1'), done(b'', oom, exit_code=2))[0]['verdict'] == 'memory_limit'
    assert judge(payload('1'), done(b'1\n', oom, exit_code=0))[0]['verdict'] == 'accepted'  # it ended well
    assert judge(payload('1'), done(b'', b'MemoryError', exit_code=1))[0]['verdict'] == 'runtime_error'  # not a marker


def test_too_much_output_is_an_output_limit(judge: Any) -> None:
    result, _ = judge(payload('x'), done(b'x' * 100, exit_code=-9, output_exceeded=True))
    assert (result['verdict'], result['reason']) == ('output_limit', '')


@pytest.mark.parametrize(
    ('flags', 'verdict'),
    [
        ({'timed_out': True, 'memory_exceeded': True, 'output_exceeded': True}, 'time_limit'),
        ({'memory_exceeded': True, 'output_exceeded': True}, 'memory_limit'),
        ({'output_exceeded': True}, 'output_limit'),
    ],
)
def test_when_several_limits_are_hit_the_verdict_follows_the_precedence(
    judge: Any, flags: dict[str, bool], verdict: str
) -> None:
    assert judge(payload('1'), done(b'1\n', exit_code=-9, **flags))[0]['verdict'] == verdict


# --- what the answer carries -------------------------------------------------------------------------


def test_streams_are_cut_to_max_chars_and_flagged(judge: Any) -> None:
    result, _ = judge(payload(None), done(b'x' * 25, b'e' * 11, exit_code=0), max_chars=10)
    assert (result['stdout'], result['stdout_truncated']) == ('x' * 10, True)
    assert (result['stderr'], result['stderr_truncated']) == ('e' * 10, True)
    result, _ = judge(payload(None), done(b'x' * 10, b'e' * 10), max_chars=10)
    assert (result['stdout_truncated'], result['stderr_truncated']) == (False, False)


def test_output_the_slot_did_not_keep_is_truncated_and_never_accepted(judge: Any) -> None:
    """The slot keeps a prefix of each stream; a program that wrote more cannot be judged equal."""
    result, _ = judge(payload('45'), done(b'45\n', b'warn', stdout_bytes=70_000, stderr_bytes=9_000))
    assert result['verdict'] == 'wrong_answer'
    assert result['stdout'] == '45\n' and result['stdout_truncated'] and result['stderr_truncated']


def test_the_timeout_marker_is_added_before_the_cut(judge: Any) -> None:
    result, _ = judge(payload(None), done(b'x' * 995, exit_code=-9, timed_out=True))
    assert result['stdout'] == ('x' * 995 + '\n' + TIMEOUT_MARKER)[:1000] and result['stdout_truncated']


def test_output_that_is_not_utf8_is_decoded_with_replacement(judge: Any) -> None:
    result, _ = judge(payload(None), done(b'\xff45\n', b'\xfe'))
    assert (result['stdout'], result['stderr']) == ('\ufffd45\n', '\ufffd')


# --- compiling -----------------------------------------------------------------------------------------


def test_a_compile_error_is_the_verdict_and_nothing_runs(judge: Any) -> None:
    failed = Compiled(ok=False, cached=True, stderr=b'main.stub:1: error: expected ;', wall_s=0.1234567)
    result, slot = judge(payload('1'), compiled=failed)
    assert slot.requests == []
    assert (result['verdict'], result['success'], result['run_success']) == ('compile_error', False, False)
    assert (result['stdout'], result['stderr'], result['exit_code']) == ('', 'main.stub:1: error: expected ;', None)
    assert result['compile'] == {
        'ok': False,
        'cached': True,
        'cost': 0.123457,
        'stderr': 'main.stub:1: error: expected ;',
        'stderr_truncated': False,
    }
    assert (result['compile_cached'], result['toolchain'], result['runtime']) == (True, 'stub 1.0', 'rt-0123456789ab')


def test_a_long_compile_error_is_cut_in_the_result_and_in_the_compile_report(judge: Any) -> None:
    failed = Compiled(ok=False, cached=False, stderr=b'E' * 30)
    result, _ = judge(payload(None), compiled=failed, max_chars=8)
    assert (result['stderr'], result['stderr_truncated']) == ('E' * 8, True)
    assert (result['compile']['stderr'], result['compile']['stderr_truncated']) == ('E' * 8, True)


def test_a_compiled_program_runs_its_cached_artifact_and_reports_the_compile(judge: Any) -> None:
    built = Compiled(ok=True, cached=False, stderr=b'warning: unused', wall_s=0.5, artifact='/cache/stub/ab/abcd')
    result, slot = judge(payload('7'), done(b'7\n'), compiled=built)
    [request] = slot.requests
    assert request.imports == {'run': '/cache/stub/ab/abcd'} and request.files == {}  # the artifact, not the source
    assert result['verdict'] == 'accepted'
    assert result['compile'] == {
        'ok': True,
        'cached': False,
        'cost': 0.5,
        'stderr': 'warning: unused',
        'stderr_truncated': False,
    }
    assert result['compile_cached'] is False


# --- what reaches the slot -------------------------------------------------------------------------------


def test_the_source_stdin_and_seed_reach_the_slot(judge: Any) -> None:
    sub = payload(None, input='a\udcffb', seed=7)  # a lone surrogate from the JSON: its byte goes through
    _, slot = judge(sub, done(b''))
    [request] = slot.requests
    assert request.stdin == b'a\xffb'
    assert request.files == {'main.stub': 'program'} and request.argv == ['/opt/stub/bin/stub-run', 'main.stub']
    assert slot.seeds == [7]
    _, slot = judge(payload(None, input=None), done(b''))
    assert slot.requests[0].stdin == b'' and slot.seeds == [None]


def test_the_run_limits_come_from_the_node_and_the_language(judge: Any) -> None:
    config = {'time_s': 4.0, 'memory_mb': 128, 'output_limit_bytes': 1 << 20, 'file_limit_bytes': 1 << 22, 'pids': 32}
    _, slot = judge(payload(None), done(b''), **config)
    limits = slot.requests[0].limits
    assert (limits.time_s, limits.memory_mb, limits.output_bytes, limits.file_bytes, limits.pids) == (
        4.0,
        128,
        1 << 20,
        1 << 22,
        32,
    )
    assert limits.capture_bytes == 64 * 1024  # at least 64 KiB, and 4 x max_chars
    assert limits.as_extra_mb == StubExecutor.as_extra_mb  # the language's adjustment
    _, slot = judge(payload(None), done(b''), executor_pids=8, pids=32)
    assert slot.requests[0].limits.pids == 8  # a language that needs fewer (or more) processes says so


def test_the_capture_covers_the_expected_output_and_stays_within_the_output_limit(judge: Any) -> None:
    def capture(expected: str | None, **config: Any) -> int:
        _, slot = judge(payload(expected), done(b''), **config)
        return int(slot.requests[0].limits.capture_bytes)

    assert capture(None, max_chars=50_000) == 200_000  # 4 x max_chars
    assert capture('x' * 200_000) == 200_000 + 64 * 1024  # the whole expected output, and some slack
    assert capture('é' * 100_000) == 200_000 + 64 * 1024  # counted in UTF-8 bytes
    assert capture('x' * 200_000, output_limit_bytes=100_000) == 100_000  # never more than the output limit


def test_the_runners_limits_are_the_languages_adjustment_of_the_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    few = type('FewProcesses', (StubExecutor,), {'pids': 8, 'as_extra_mb': 512, 'rlimit_as': False})
    monkeypatch.setattr(runner_module, 'EXECUTORS', {'stub': few})
    runner = Runner(TOOLCHAIN, StubSlot(), node_config(time_s=3.0, memory_mb=64, pids=32))  # type: ignore[arg-type]
    limits = runner.limits('stub', None)
    assert (limits.time_s, limits.memory_mb) == (3.0, 64)
    assert (limits.pids, limits.as_extra_mb, limits.use_rlimit_as) == (8, 512, False)


# --- languages -----------------------------------------------------------------------------------------


def test_an_unknown_language_is_unsupported() -> None:
    runner = Runner(TOOLCHAIN, StubSlot(), node_config())  # type: ignore[arg-type]
    with pytest.raises(UnsupportedLanguage, match="'cobol'"):
        runner.run(payload(None, type='cobol'))
    assert runner.executor('python') is runner.executor('python')  # one executor per language and runner
