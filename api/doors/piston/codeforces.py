"""open-r1's Codeforces package on the Piston door: compile, run on the test, check.

open-r1 (``open_r1.utils.competitive_programming.cf_scoring``) sends one execute per test in a
Codeforces language (``c++17``, ``cf_python3``, ...) with the files ``main.<ext>`` (the program),
``input.txt``, ``correct_output.txt``, ``grader_config`` (``TIME_LIMIT`` s, ``MEMORY_LIMIT`` MB,
``INPUT_MODE`` ``stdio`` or ``file``) and an optional ``checker.py``, and reads a pass as
``run.code == 0`` with ``run.stdout`` ``"1"``; ``compile.code != 0`` is a compile error.  This module
does what that package does, in the judge:

1. the program runs as one submission on the route's lane, compiled once per node and cached, under
   ``TIME_LIMIT`` and ``MEMORY_LIMIT`` (never above the judge's limits), on the test's input (its
   ``\\r`` line ends removed) from stdin, or from ``input.txt`` to ``output.txt`` in file mode; the
   expected output is never in its directory;
2. without a checker, the output is compared by the judge's ``yesno`` checker (tokens, yes/no in any
   case); with ``checker.py``, the checker runs as a second submission, ``python3 checker.py input.txt
   correct_output.txt output.txt`` (empty lines removed from both outputs), and passes the test when
   it prints ``1`` or ``100``;
3. the answer's ``run`` says ``1`` or ``0`` on stdout with the package's feedback on stderr, and the
   package's exit codes: 124 for a time limit, 134 for a memory limit, the program's own (128 +
   signal for a signal) for a runtime error, the checker's own after a check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi import Request, Response

from api.deps import Gateway
from api.doors.common import fetched, json_answer, verdict_of
from api.doors.piston.models import ExecuteRequest
from api.doors.piston.runtimes import Runtime
from api.doors.piston.stages import (
    BadRequest,
    checker_code,
    compile_stage,
    job_files,
    package_run,
    package_verdict,
    run_one,
)
from api.routes.table import SubmitRoute
from judge import workfiles
from judge.checker import get_checker
from judge.contracts import ResultDict, RunPayload, Verdict, new_id

CHECKER_TIME_S = 10.0
"""The checker's time limit (the package's), lowered by the judge's."""
_KNOWN = ('input.txt', 'correct_output.txt', 'grader_config', 'checker.py')


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode('utf-8', 'replace')


def _config(text: str | None) -> dict[str, str]:
    config: dict[str, str] = {}
    for line in (text or '').splitlines():
        key, sep, value = line.partition('=')
        if sep:
            config[key.strip()] = value.strip().strip('"\'')
    return config


def _number(config: dict[str, str], key: str) -> float | None:
    if not config.get(key):
        return None
    try:
        return float(config[key])
    except ValueError:
        raise BadRequest(f'grader_config: {key} must be a number, not {config[key]!r}') from None


def _lines(text: str) -> str:
    """``text`` with ``\\r`` line ends and empty lines removed (the package's clean-up of both outputs)."""
    return ''.join(f'{line}\n' for line in text.replace('\r\n', '\n').split('\n') if line)


@dataclass
class Job:
    """One Codeforces test job."""

    runtime: Runtime
    program: str
    stdin: str
    expected: str | None
    checker: str | None
    file_mode: bool
    time_s: float | None
    memory_mb: float | None
    files: dict[str, bytes] = field(default_factory=dict)

    @classmethod
    def of(cls, body: ExecuteRequest, runtime: Runtime) -> Job:
        """The job of an execute request; `BadRequest` as the package would fail it."""
        program, files = job_files(body)
        config = _config(_text(files.get('grader_config')))
        mode = config.get('INPUT_MODE', 'stdio')
        if mode not in ('stdio', 'file'):
            raise BadRequest(f'grader_config: INPUT_MODE must be stdio or file, not {mode!r}')
        time_s = _number(config, 'TIME_LIMIT') or (body.run_timeout / 1000 if body.run_timeout else None)
        stdin = (_text(files.get('input.txt')) or '').replace('\r\n', '\n')
        return cls(
            runtime=runtime,
            program=program,
            stdin=stdin,
            expected=_text(files.get('correct_output.txt')),
            checker=_text(files.get('checker.py')),
            file_mode=mode == 'file',
            time_s=time_s,
            memory_mb=_number(config, 'MEMORY_LIMIT'),
            files={name: data for name, data in files.items() if name not in _KNOWN},
        )

    def solution(self) -> RunPayload:
        """The program's submission."""
        payload: RunPayload = {
            'sub_id': new_id(),
            'type': self.runtime.judge,
            'solution': self.program,
            'input': None if self.file_mode else self.stdin,
            'expected_output': None,
            'full': True,
        }
        files = {name: workfiles.encode(data) for name, data in self.files.items()}
        if self.file_mode:
            files['input.txt'] = workfiles.encode(self.stdin.encode())
            payload['fetch'] = ['output.txt']
        elif self.expected is not None and self.checker is None:
            payload['expected_output'], payload['checker'] = self.expected, 'yesno'
        if files:
            payload['files'] = files
        if self.time_s:
            payload['time_limit_s'] = self.time_s
        if self.memory_mb:
            payload['memory_mb'] = max(1, round(self.memory_mb))
        return payload

    def check(self, output: str) -> RunPayload:
        """The checker's submission, on the program's output."""
        assert self.checker is not None and self.expected is not None
        files = {'input.txt': self.stdin, 'correct_output.txt': _lines(self.expected), 'output.txt': _lines(output)}
        return {
            'sub_id': new_id(),
            'type': 'python',
            'solution': self.checker,
            'input': None,
            'expected_output': None,
            'files': {name: workfiles.encode(text.encode()) for name, text in files.items()},
            'args': ['input.txt', 'correct_output.txt', 'output.txt'],
            'time_limit_s': CHECKER_TIME_S,
            'full': True,
        }

    def output(self, result: ResultDict) -> str:
        """What the program wrote: stdout, or ``output.txt`` in file mode."""
        if not self.file_mode:
            return result.get('stdout') or ''
        data = fetched(result).get('output.txt')
        return '' if data is None else workfiles.decode(data).decode('utf-8', 'replace')

    async def judge(self, gateway: Gateway, request: Request, route: SubmitRoute, version: str) -> Response:
        """Run, check, answer as the package does."""
        result = await run_one(gateway, request, route, self.solution())
        if isinstance(result, Response):
            return result
        verdict = verdict_of(result)
        answer: dict[str, Any] = {'language': self.runtime.language, 'version': version}
        answer['compile'] = compile_stage(result)
        if verdict is Verdict.COMPILE_ERROR:
            return json_answer(answer | {'run': answer['compile']})
        failed = self._failure(result, verdict)
        if failed is not None:
            return json_answer(answer | {'run': package_run(result, *failed)})
        if self.expected is None:
            return json_answer(answer | {'run': package_run(result, self.output(result), '', 0)})
        if self.checker is None:
            passed = verdict is Verdict.ACCEPTED
            if self.file_mode:
                passed = get_checker('yesno')(self.output(result), self.expected)
            return json_answer(answer | {'run': package_verdict(result, passed, 'diff', 0)})
        check = await run_one(gateway, request, route, self.check(self.output(result)))
        if isinstance(check, Response):
            return check
        passed = ''.join((check.get('stdout') or '').split()) in ('1', '100')
        return json_answer(answer | {'run': package_verdict(result, passed, 'checker', checker_code(check))})

    def _failure(self, result: ResultDict, verdict: Verdict) -> tuple[str, str, int] | None:
        if verdict is Verdict.TIME_LIMIT:
            return '0\n', f'Time limit exceeded ({_show(self.time_s)}s)\n', 124
        if verdict is Verdict.MEMORY_LIMIT:
            return '0\n', f'Memory limit exceeded ({_show(self.memory_mb)}MB)\n', 134
        if verdict in (Verdict.RUNTIME_ERROR, Verdict.OUTPUT_LIMIT):
            code = int(result.get('exit_code') or 1)
            code = 128 - code if code < 0 else code  # a signal, as a shell reports it
            return '0\n', f'Runtime error with exit code {code}\n', code
        return None


def _show(value: float | None) -> str:
    return '' if value is None else f'{value:g}'
