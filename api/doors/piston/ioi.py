"""open-r1's IOI package (``cms_ioi``) on the Piston door, Batch and Communication tasks: compile the
solution with the problem's grader, run it on the test (beside the problem's manager), check.

open-r1 (``open_r1.utils.competitive_programming.ioi_scoring.run_submission``) sends, with language
``cms_ioi`` and version ``*``: ``graders/<problem>.cpp`` (the solution), ``input.txt``, optionally
``correct_output.txt``, and the problem's grader files (``graders/grader.cpp``, ``graders/<problem>.h``,
``graders/grader_config.json`` with ``task_type``, ``code``, ``time_limit`` in seconds and
``memory_limit`` in bytes, optionally ``graders/stub.cpp`` and ``checker/checker.cpp``).  It reads
the score from ``run.stdout`` and the feedback from ``run.stderr``; ``compile.code != 0`` is a
compile error.  This module does what that package does, in the judge:

1. the solution compiles once per node with the grader (``grader.cpp``, ``stub.cpp``) and the
   headers beside it, ``EVAL`` defined, as the judge's C++ (gnu++17 -O2), and runs on the input
   under the problem's time and memory limits (never above the judge's);
2. with a correct output and ``checker/checker.cpp``, the checker compiles (once per node) and runs as
   a second submission, ``checker input.txt correct_output.txt output.txt``: its stdout (the score)
   and stderr (the feedback) are the answer's; without a checker the output is compared by tokens
   (``1`` or ``0``); without a correct output the answer is the solution's output;
3. a time or memory limit or a runtime error scores ``0`` with the package's feedback;
4. Communication tasks (``task_type_parameters_Communication_num_processes``, ``_user_io``,
   ``_manager_args`` in the config): ``graders/manager.cpp`` compiles (once per node) with the headers
   beside it, and the solution runs beside it in one execution (`judge.worker.communication`): the
   manager reads ``input.txt`` and its stdout and stderr are the answer, checked by the checker when
   there is one and a correct output (the package never diffs a Communication output).  The problem's
   time limit bounds the whole exchange (the package times the manager), its memory limit all the
   programs together.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response

from api.deps import Gateway
from api.doors.common import json_answer, verdict_of
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
from judge.contracts import MANAGER_MAX_PROCESSES, ManagerDict, ResultDict, RunPayload, Verdict, new_id

EVAL = '#define EVAL 1\n#line 1\n'
"""Prepended to the solution and grader sources (the package compiles with ``-DEVAL``); line numbers kept."""
_GRADED = ('grader.cpp', 'stub.cpp')
_COMMUNICATION = 'task_type_parameters_Communication_'


def _text(data: bytes) -> str:
    return data.decode('utf-8', 'replace')


@dataclass
class Job:
    """One IOI test job (Batch)."""

    runtime: Runtime
    program: str
    grader: dict[str, str]
    """The compile's files, flattened out of ``graders/``: path -> base64."""
    stdin: str
    expected: str | None
    checker: str | None
    time_s: float | None
    memory_mb: int | None
    manager: ManagerDict | None = None
    """Communication tasks: the manager the solution talks to."""

    @classmethod
    def of(cls, body: ExecuteRequest, runtime: Runtime) -> Job:
        """The job of an execute request; `BadRequest` for what the package (or this door) cannot run."""
        program, files = job_files(body)
        config_file = files.get('graders/grader_config.json')
        if config_file is None:
            raise BadRequest('graders/grader_config.json not found')
        try:
            config = json.loads(config_file)
        except ValueError:
            raise BadRequest('graders/grader_config.json is not JSON') from None
        if not isinstance(config, dict):
            raise BadRequest('graders/grader_config.json is not a JSON object')
        task = config.get('task_type')
        if task not in ('Batch', 'Communication'):
            raise BadRequest(f'Unsupported task type "{task}" (this door runs Batch and Communication tasks)')
        grader: dict[str, str] = {}
        for name, data in files.items():
            folder, base = posixpath.split(name)
            if folder != 'graders' or base in ('grader_config.json', 'manager.cpp'):
                continue
            if base.endswith('.cpp') and base not in _GRADED:
                continue  # the package compiles only grader.cpp and stub.cpp with the solution
            content = EVAL.encode() + data if base in _GRADED else data
            grader[base] = workfiles.encode(content)
        checker = files.get('checker/checker.cpp')
        expected = files.get('correct_output.txt')
        return cls(
            runtime=runtime,
            program=EVAL + program,
            grader=grader,
            stdin=_text(files.get('input.txt', b'')),
            expected=None if expected is None else _text(expected),
            checker=None if checker is None else _text(checker),
            time_s=_number(config, 'time_limit'),
            memory_mb=None if not _number(config, 'memory_limit') else max(1, round(config['memory_limit'] / 2**20)),
            manager=_manager(config, files) if task == 'Communication' else None,
        )

    def solution(self) -> RunPayload:
        """The solution's submission, compiled with the grader."""
        payload: RunPayload = {
            'sub_id': new_id(),
            'type': self.runtime.judge,
            'solution': self.program,
            'input': self.stdin,
            'expected_output': None,
            'compile_files': self.grader,
            'full': True,
        }
        if self.manager is not None:
            payload['manager'] = self.manager
        elif self.expected is not None and self.checker is None:
            payload['expected_output'], payload['checker'] = self.expected, 'tokens'
        if self.time_s:
            payload['time_limit_s'] = self.time_s
        if self.memory_mb:
            payload['memory_mb'] = self.memory_mb
        return payload

    def check(self, output: str) -> RunPayload:
        """The checker's submission, on the solution's output."""
        assert self.checker is not None and self.expected is not None
        files = {'input.txt': self.stdin, 'correct_output.txt': self.expected, 'output.txt': output}
        return {
            'sub_id': new_id(),
            'type': 'cpp',
            'solution': self.checker,
            'input': None,
            'expected_output': None,
            'files': {name: workfiles.encode(text.encode()) for name, text in files.items()},
            'args': ['input.txt', 'correct_output.txt', 'output.txt'],
            'full': True,
        }

    async def judge(self, gateway: Gateway, request: Request, route: SubmitRoute, version: str) -> Response:
        """Compile, run, check, answer as the package does."""
        result = await run_one(gateway, request, route, self.solution())
        if isinstance(result, Response):
            return result
        verdict = verdict_of(result)
        answer: dict[str, Any] = {'language': self.runtime.language, 'version': version}
        answer['compile'] = compile_stage(result)
        if verdict is Verdict.COMPILE_ERROR:
            return json_answer(answer | {'run': answer['compile']})
        zero = self._failure(result, verdict)
        if zero is not None:
            return json_answer(answer | {'run': package_run(result, '0\n', zero, 0)})
        output = result.get('stdout') or ''
        if self.manager is not None and (self.expected is None or self.checker is None):
            return json_answer(answer | {'run': package_run(result, output, result.get('stderr') or '', 0)})
        if self.expected is None:
            return json_answer(answer | {'run': package_run(result, output, '', 0)})
        if self.checker is None:
            return json_answer(answer | {'run': package_verdict(result, verdict is Verdict.ACCEPTED, 'diff', 0)})
        check = await run_one(gateway, request, route, self.check(output))
        if isinstance(check, Response):
            return check
        if verdict_of(check) is Verdict.COMPILE_ERROR:
            failed = compile_stage(check)
            return json_answer(answer | {'compile': failed, 'run': failed})
        report = package_run(result, check.get('stdout') or '', check.get('stderr') or '', checker_code(check))
        return json_answer(answer | {'run': report})

    def _failure(self, result: ResultDict, verdict: Verdict) -> str | None:
        if verdict is Verdict.TIME_LIMIT:
            return f'Time limit exceeded ({self.time_s:g}s)\n' if self.time_s else 'Time limit exceeded\n'
        if verdict is Verdict.MEMORY_LIMIT:
            return 'Memory limit exceeded\n'
        if verdict in (Verdict.RUNTIME_ERROR, Verdict.OUTPUT_LIMIT):
            code = int(result.get('exit_code') or 1)
            return f'Runtime error with exit code {128 - code if code < 0 else code}\n'
        return None


def _number(config: dict[str, Any], key: str) -> float | None:
    value = config.get(key)
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise BadRequest(f'graders/grader_config.json: {key} must be a non-negative number')
    return float(value)


def _manager(config: dict[str, Any], files: dict[str, bytes]) -> ManagerDict:
    """A Communication task's manager, from ``graders/manager.cpp`` and the config's parameters."""
    source = files.get('graders/manager.cpp')
    if source is None:
        raise BadRequest('graders/manager.cpp not found (a Communication task needs its manager)')
    processes = config.get(f'{_COMMUNICATION}num_processes', 1)
    if not isinstance(processes, int) or isinstance(processes, bool) or not 1 <= processes <= MANAGER_MAX_PROCESSES:
        raise BadRequest(f'{_COMMUNICATION}num_processes must be an integer from 1 to {MANAGER_MAX_PROCESSES}')
    user_io = config.get(f'{_COMMUNICATION}user_io', 'std_io')
    if user_io not in ('std_io', 'fifo_io'):
        raise BadRequest(f'{_COMMUNICATION}user_io must be "std_io" or "fifo_io"')
    args = config.get(f'{_COMMUNICATION}manager_args', '')
    if not isinstance(args, str):
        raise BadRequest(f'{_COMMUNICATION}manager_args must be a string')
    headers = {
        posixpath.basename(name): workfiles.encode(data)
        for name, data in files.items()
        if posixpath.dirname(name) == 'graders' and not name.endswith(('.cpp', '.json'))
    }
    return {
        'source': _text(source),
        'files': headers,
        'processes': processes,
        'user_io': user_io,
        'args': args.split(),
    }
