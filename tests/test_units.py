"""Pure logic: checkers, verdict precedence, settings, contracts, layering rules."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from judge.checker import check_exact, check_strip, check_tokens, get_checker
from judge.contracts import (
    BatchJudgeTestsRequest,
    BatchSubmission,
    JudgeTestsRequest,
    ResultReason,
    Submission,
    Verdict,
)
from judge.sandbox.server.execute import _Done
from judge.sandbox.zygote.warm import DONE_RECORD
from judge.settings import Settings
from judge.verdict import pick, reason_for

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    'checker,out,exp,ok',
    [
        (check_strip, '  45 \n', '\n45\n\n', True),
        (check_strip, '4 5', '45', False),
        (check_exact, '45\n', '45\n', True),
        (check_exact, '45', '45\n', False),
        (check_tokens, '1  2\n3', '1 2 3', True),
        (check_tokens, '1 2', '1 2 3', False),
    ],
)
def test_checkers(checker, out: str, exp: str, ok: bool) -> None:  # type: ignore[no-untyped-def]
    assert checker(out, exp) is ok


def test_float_checker() -> None:
    check = get_checker('float:1e-6')
    assert check('0.3333333 x', '0.33333334 x')
    assert not check('0.34', '0.33')
    assert not check('a', '1.0')
    with pytest.raises(ValueError):
        get_checker('nope')


def test_verdict_precedence() -> None:
    assert pick(set()) is Verdict.ACCEPTED
    assert pick({Verdict.WRONG_ANSWER, Verdict.TIME_LIMIT, Verdict.OUTPUT_LIMIT}) is Verdict.TIME_LIMIT
    assert pick({Verdict.RUNTIME_ERROR, Verdict.MEMORY_LIMIT}) is Verdict.MEMORY_LIMIT
    assert reason_for(Verdict.TIME_LIMIT) is ResultReason.WORKER_TIMEOUT
    assert reason_for(Verdict.MEMORY_LIMIT) is ResultReason.UNSPECIFIED
    assert reason_for(Verdict.INTERNAL_ERROR).value == 'internal_error'


def test_settings_defaults_match_upstream(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        'MAX_EXECUTION_TIME',
        'MAX_MEMORY',
        'MAX_WORKERS',
        'MAX_STDOUT_ERROR_LENGTH',
        'REDIS_URI',
        'MAX_QUEUE_WORK_LIFE_TIME',
        'LONG_BATCH_MAX_QUEUE_WAIT_TIME',
    ):
        monkeypatch.delenv(name, raising=False)
    s = Settings()
    assert (s.max_execution_time, s.max_memory, s.max_stdout_error_length) == (10, 256, 1000)
    assert s.max_workers >= 1 and s.max_queue_wait_time == 19 and s.long_batch_wait_s == 3615
    monkeypatch.setenv('MAX_EXECUTION_TIME', '4')
    monkeypatch.setenv('MAX_WORKERS', '0')
    s = Settings()
    assert s.max_queue_wait_time == 13 and s.max_workers >= 1
    monkeypatch.setenv('MAX_MEMORY', '-1')
    with pytest.raises(ValidationError):
        Settings()


def test_submission_contract() -> None:
    sub = Submission.model_validate({'type': 'python', 'solution': 'x', 'sub_id': '', 'extra': 1})
    assert sub.sub_id and len(sub.sub_id) == 36
    with pytest.raises(ValidationError):
        Submission.model_validate({'type': 'math', 'solution': 'x'})
    with pytest.raises(ValidationError):
        BatchSubmission.model_validate({'submissions': []})


_JOB = {'type': 'python', 'solution': 'x', 'tests': [{'expected_output': '1'}]}
_REQUESTS: dict[str, tuple[type[BaseModel], dict[str, Any]]] = {
    'submission': (Submission, {'type': 'python', 'solution': 'x'}),
    'batch': (BatchSubmission, {'submissions': [{'type': 'python', 'solution': 'x'}]}),
    'tests': (JudgeTestsRequest, _JOB),
    'tests_batch': (BatchJudgeTestsRequest, {'jobs': [_JOB]}),
}


@pytest.mark.parametrize('kind', sorted(_REQUESTS))
def test_every_request_fills_and_checks_its_id(kind: str) -> None:
    model, body = _REQUESTS[kind]
    ids = {model.model_validate(body | {'sub_id': given}).model_dump()['sub_id'] for given in (None, '', None)}
    assert len(ids) == 3 and all(i and len(i) == 36 for i in ids)  # a fresh uuid4 string each time
    assert model.model_validate(body | {'sub_id': 'mine', 'unknown': 1}).model_dump()['sub_id'] == 'mine'
    with pytest.raises(ValidationError, match='lone surrogate'):
        model.model_validate(body | {'sub_id': 'a\ud800b'})


def test_slot_server_stays_lean() -> None:
    """The slot server's zygote forks per execution: `threading` (pulled in by `logging`) runs an at-fork
    handler in every child, doubling the fork's cost, so the server must not import either; nor
    `dataclasses`, whose `inspect` and `ast` make every fork and exit ~7% dearer."""
    banned = ('logging', 'threading', 'platform', 'random', 'dataclasses', 'inspect')
    code = (
        'import sys; sys.path.insert(0, sys.argv[1]); import judge.sandbox.server.main; '
        f'print(sorted(m for m in {banned!r} if m in sys.modules))'
    )
    out = subprocess.run([sys.executable, '-I', '-c', code, str(ROOT)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == '[]', out.stdout


def test_lazy_logger_reports_warnings_in_a_process_without_logging() -> None:
    code = (
        'import sys; sys.path.insert(0, sys.argv[1]); from judge.sandbox.lazylog import get_logger; '
        "log = get_logger('judge.sandbox.x'); log.debug('quiet %d', 1); log.info('quiet'); "
        "assert 'logging' not in sys.modules; log.warning('loud %d', 2)"
    )
    out = subprocess.run([sys.executable, '-I', '-c', code, str(ROOT)], capture_output=True, text=True, check=True)
    assert out.stderr == 'judge.sandbox.x: loud 2\n'


def test_worker_requests_send_every_task_event_but_started(monkeypatch: pytest.MonkeyPatch) -> None:
    import judge.transport.internals.request
    from judge.worker.tasks import run

    sent: list[str] = []

    class Eventer:
        enabled = True

        def send(self, type: str, **fields: object) -> None:
            sent.append(type)

    request = object.__new__(judge.transport.internals.request.Request)
    request._eventer, request._task, request.id = Eventer(), run, 'task-id'
    for event in ('task-received', 'task-started', 'task-succeeded', 'task-failed'):
        request.send_event(event)
    assert sent == ['task-received', 'task-succeeded', 'task-failed']
    assert run.Request == 'judge.transport.internals.request:Request'  # the worker builds our class for this task
    monkeypatch.setattr(judge.transport.internals.request, '_SEND_STARTED', True)
    request.send_event('task-started')
    assert sent[-1] == 'task-started'


def test_worker_requests_look_the_time_zone_up_once() -> None:
    import judge.transport.internals.request
    from judge.app import app

    request = object.__new__(judge.transport.internals.request.Request)
    request._app = app
    assert request.tzlocal == app.conf.timezone  # None (UTC) unless configured
    assert (
        judge.transport.internals.request.Request._app_timezone is not judge.transport.internals.request._UNSET
    )  # cached, even when None


@pytest.mark.parametrize(
    ('payload', 'expected'),
    [
        (DONE_RECORD.pack(3, 0.25, 1024), (3, 0.25, 1024)),
        (b'', None),  # the program ended without a record (os._exit, exec)
        (b'junk', None),
        (DONE_RECORD.pack(0, 0.0, 0) * 2, None),  # more than one write: not ours
    ],
)
def test_a_done_record_is_believed_only_when_well_formed(
    payload: bytes, expected: tuple[int, float, int] | None
) -> None:
    read_end, write_end = os.pipe()
    if payload:
        os.write(write_end, payload)
    os.close(write_end)
    done = _Done(read_end)
    done.read()
    assert done.record == expected
    assert done.fd is None  # read once, then closed


def test_every_sandbox_exception_is_a_sandbox_error_from_an_import_free_module() -> None:
    from judge.sandbox import errors

    tree = ast.parse((ROOT / 'judge' / 'sandbox' / 'errors.py').read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    classes = [v for v in vars(errors).values() if isinstance(v, type) and v.__module__ == errors.__name__]
    assert len(classes) == 8 and all(issubclass(c, errors.SandboxError) for c in classes), classes
    assert issubclass(errors.CleanupError, OSError)  # the slot server catches it as one where it forks spares
    e = errors.CleanupError(2, 'cannot remove x')
    assert (e.errno, str(e)) == (2, '[Errno 2] cannot remove x')
    from judge.sandbox.client import SandboxError  # where callers have always imported it from

    assert SandboxError is errors.SandboxError


def _bare_job(source: str) -> dict[str, object]:
    sub = {'sub_id': 's1', 'type': 'python', 'solution': source, 'input': '', 'expected_output': ''}
    return {'sub': sub, 'reply_to': '', 'index': 0, 'batch': ''}  # no reply list: nothing touches Redis


def test_a_host_without_a_free_slot_fails_the_task_not_the_submission(monkeypatch: pytest.MonkeyPatch) -> None:
    """`NoFreeSlot` is a `SandboxError` now, but it is the process's condition: the task fails as it
    always did (`judge.worker.tasks` answers for it), once per submission, and the next one claims again."""
    from judge.sandbox.errors import NoFreeSlot
    from judge.worker import service as worker

    claims: list[int] = []

    def no_slot(*_: object) -> tuple[int, int]:
        claims.append(1)
        raise NoFreeSlot('all sandbox slots of this host are in use')

    monkeypatch.setattr(worker, 'claim_slot', no_slot)
    monkeypatch.setattr(worker, 'describe_runtime', lambda _python: {'digest': 'x'})
    service = worker.Service(Settings())
    with pytest.raises(NoFreeSlot):
        service.start()  # at start-up (`judge.worker.tasks._start_slot` logs it)
    for n in (2, 3):
        with pytest.raises(NoFreeSlot):
            service.judge(_bare_job('print(1)'))  # type: ignore[arg-type]
        assert len(claims) == n


def test_a_sandbox_failure_is_the_submissions_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.sandbox.errors import SandboxError
    from judge.worker import service as worker

    class BrokenRunner:
        def run(self, _sub: object) -> object:
            raise SandboxError('slot server failed to start')

    service = worker.Service(Settings())
    service._runner = BrokenRunner()  # type: ignore[assignment]
    result = service.judge(_bare_job('print(1)'))  # type: ignore[arg-type]
    assert result is not None and result['reason'] == 'internal_error', result
    assert 'SandboxError: slot server failed to start' in str(result), result


def test_a_slot_that_fails_to_start_gives_its_slot_number_back(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each submission builds the runner again while the slot cannot start; it must not keep a slot
    number each time (4096 failures would take every slot of the host)."""
    from judge.sandbox.client import SlotClient
    from judge.sandbox.errors import SandboxError
    from judge.sandbox.slots import claim_slot
    from judge.worker import service as worker

    claimed: list[int] = []

    def claim(*_: object) -> tuple[int, int]:
        index, fd = claim_slot(str(tmp_path / 'locks'))
        claimed.append(index)
        return index, fd

    def refuse(self: SlotClient) -> None:
        raise SandboxError('slot server refused to start: JailError: no isolation is available')

    monkeypatch.setattr(worker, 'claim_slot', claim)
    monkeypatch.setattr(SlotClient, 'ensure_started', refuse)
    monkeypatch.setattr(worker, 'describe_runtime', lambda _python: {'digest': 'x'})
    monkeypatch.setenv('JUDGE_CACHE_DIR', str(tmp_path / 'cache'))
    monkeypatch.setenv('JUDGE_WORK_ROOT', str(tmp_path / 'work'))
    service = worker.Service(Settings())
    for _ in range(3):
        result = service.judge(_bare_job('print(1)'))  # type: ignore[arg-type]
        assert result is not None and result['reason'] == 'internal_error', result
        assert 'refused to start' in str(result)
    assert claimed == [0, 0, 0]
