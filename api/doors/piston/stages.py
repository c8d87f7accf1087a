"""What the Piston door's plain jobs (`api.doors.piston.routes`) and open-r1's packages (`api.doors.piston.codeforces`,
`api.doors.piston.ioi`) share: Piston's refusal, its stages (``compile``, ``run``) built from the judge's
results, the packages' ``run`` stage, a job's files and limits, and its answers to refusals and
infrastructure failures."""

from __future__ import annotations

import math
import signal
from collections.abc import Sequence
from typing import Any

from fastapi import Request, Response

from api.deps import Gateway
from api.doors.common import Refused, infra, json_answer, run, usage, verdict_of
from api.doors.piston.models import ExecuteRequest
from api.routes.table import SubmitRoute
from judge import workfiles
from judge.contracts import ResultDict, RunPayload, Verdict


class BadRequest(Exception):
    """A job Piston would refuse: HTTP 400 with its message."""


def bad_request(message: str) -> Response:
    """Piston's refusal."""
    return json_answer({'message': message}, 400)


def validation_answer(errors: Sequence[Any]) -> Response:
    """Piston's 400 for a request that fails validation: its first problem, in words."""
    first = errors[0] if errors else {}
    where = '.'.join(str(part) for part in first.get('loc', ())[1:]) or 'body'
    text = f'{where}: {first.get("msg", "invalid request")}'.encode('ascii', 'backslashreplace').decode()
    return bad_request(text)


def _signal_name(number: int) -> str | None:
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def run_stage(result: ResultDict) -> dict[str, Any]:
    """Piston's ``run`` stage of a result."""
    verdict = verdict_of(result)
    used = usage(result)
    stdout, stderr = result.get('stdout') or '', result.get('stderr') or ''
    code: int | None = result.get('exit_code')
    number = used.get('signal')
    status, sig, message = None, None, None
    if verdict is Verdict.TIME_LIMIT:
        status, sig, code, message = 'TO', 'SIGKILL', None, 'Time limit exceeded'
    elif verdict is Verdict.OUTPUT_LIMIT:
        status, sig, code, message = 'OL', 'SIGKILL', None, 'stdout length exceeded'
    elif number:
        status, sig, code, message = 'SG', _signal_name(int(number)), None, f'Caught fatal signal {number}'
    elif code:
        status, message = 'RE', f'Exited with error status {code}'
    return {
        'stdout': stdout,
        'stderr': stderr,
        'output': stdout + stderr,
        'code': code,
        'signal': sig,
        'message': message,
        'status': status,
        'memory': int(used['max_rss_kb']) * 1024 if 'max_rss_kb' in used else None,
        'cpu_time': round(float(used['cpu_s']) * 1000) if 'cpu_s' in used else None,
        'wall_time': round(float(result.get('cost') or 0.0) * 1000),
    }


def compile_stage(result: ResultDict, stdout: str = '') -> dict[str, Any]:
    """Piston's ``compile`` stage of a compiled language's result."""
    compiled = result.get('compile')
    ok = compiled is None or compiled['ok']
    stderr = '' if compiled is None else compiled['stderr']
    return {
        'stdout': stdout,
        'stderr': stderr,
        'output': stdout + stderr,
        'code': 0 if ok else 1,
        'signal': None,
        'message': None if ok else 'Exited with error status 1',
        'status': None if ok else 'RE',
        'memory': None,
        'cpu_time': None,
        'wall_time': round((0.0 if compiled is None else compiled['cost']) * 1000),
    }


def package_run(result: ResultDict, stdout: str, stderr: str, code: int) -> dict[str, Any]:
    """The ``run`` stage of open-r1's packages: what they print and their exit code (``RE`` unless 0, no
    signal), with the usage and times of the program's ``result``."""
    failed = code != 0
    return run_stage(result) | {
        'stdout': stdout,
        'stderr': stderr,
        'output': stdout + stderr,
        'code': code,
        'signal': None,
        'message': f'Exited with error status {code}' if failed else None,
        'status': 'RE' if failed else None,
    }


def package_verdict(result: ResultDict, passed: bool, how: str, code: int) -> dict[str, Any]:
    """The packages' ``run`` stage of a checked output: ``1`` or ``0``, and the feedback (``how``: diff, checker)."""
    said = 'Output is correct' if passed else "Output isn't correct"
    return package_run(result, '1\n' if passed else '0\n', f'{said} ({how})\n', code)


def checker_code(check: ResultDict) -> int:
    """A checker's exit code as the packages report it: 124 for a time limit."""
    return 124 if verdict_of(check) is Verdict.TIME_LIMIT else int(check.get('exit_code') or 0)


def limits(payload: RunPayload, body: ExecuteRequest) -> RunPayload:
    """``run_timeout`` (ms) and ``run_memory_limit`` (bytes) as the payload's own (lower) limits."""
    if body.run_timeout:
        payload['time_limit_s'] = body.run_timeout / 1000
    if body.run_memory_limit and body.run_memory_limit > 0:
        payload['memory_mb'] = max(1, math.ceil(body.run_memory_limit / 2**20))
    return payload


def job_files(body: ExecuteRequest) -> tuple[str, dict[str, bytes]]:
    """The program (the first UTF-8 file) and every other file by name; `BadRequest` as Piston refuses."""
    program: str | None = None
    files: dict[str, bytes] = {}
    for i, file in enumerate(body.files):
        name = file.name or f'file{i}.code'
        try:
            workfiles.check_path(name)
            data = file.data()
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        if program is None and file.encoding == 'utf8':
            program = file.content
        else:
            files[name] = data
    if program is None:
        raise BadRequest('files must include at least one utf8 encoded file')
    return program, files


async def run_one(gateway: Gateway, request: Request, route: SubmitRoute, payload: RunPayload) -> ResultDict | Response:
    """One submission's result, or Piston's answer when it was refused or the infrastructure failed it."""
    outcome = await run(gateway, request, route, [payload])
    refused = unanswered(outcome)
    if refused is not None:
        return refused
    assert not isinstance(outcome, Refused)
    return outcome[0]


def unanswered(outcome: list[ResultDict] | Refused) -> Response | None:
    """Piston's answer to a refused request or an infrastructure failure, else None."""
    if isinstance(outcome, Refused):
        return json_answer({'message': outcome.message}, outcome.status, outcome.headers)
    for result in outcome:
        if infra(result):
            why = result.get('error') or result.get('reason')
            return json_answer({'message': f'the judge could not run the job ({why}); retry'}, 503)
    return None
