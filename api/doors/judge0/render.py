"""A Judge0 submission as the Judge0 door keeps and shows it: the record stored by token
(`judge.transport.gateway.records`), its outcome from the judge's result, and the fields an answer shows.

Statuses: 3 Accepted (a zero exit, and the output matches ``expected_output`` by Judge0's rule, the
judge's ``lines`` checker), 4 Wrong Answer, 5 Time Limit Exceeded, 6 Compilation Error, 7-10 the
runtime errors of SIGSEGV, SIGXFSZ, SIGFPE and SIGABRT, 11 a non-zero exit (NZEC), 12 any other
signal, a memory or an output limit, 13 Internal Error for whatever the infrastructure could not
judge (with ``message``), never a wrong answer; 1 In Queue until the result is there.
"""

from __future__ import annotations

import base64
import signal
import time
from datetime import UTC, datetime
from typing import Any

from api.doors.common import infra, toolchains, usage, verdict_of
from api.doors.judge0.models import LANGUAGES, STATUSES
from api.doors.semver import show
from judge.contracts import ResultDict, Verdict

DEFAULT_FIELDS = ('token', 'time', 'memory', 'stdout', 'stderr', 'compile_output', 'message', 'status')
ALL_FIELDS = (
    'source_code', 'language_id', 'stdin', 'expected_output', 'stdout', 'status_id', 'created_at', 'finished_at',
    'time', 'memory', 'stderr', 'token', 'number_of_runs', 'cpu_time_limit', 'cpu_extra_time', 'wall_time_limit',
    'memory_limit', 'stack_limit', 'max_processes_and_or_threads', 'enable_per_process_and_thread_time_limit',
    'enable_per_process_and_thread_memory_limit', 'max_file_size', 'compile_output', 'exit_code', 'exit_signal',
    'message', 'wall_time', 'compiler_options', 'command_line_arguments', 'redirect_stderr_to_stdout',
    'callback_url', 'additional_files', 'enable_network', 'status', 'language',
)  # fmt: skip
"""Judge0 CE 1.13.1's submission fields (``fields=*``)."""
TEXT_FIELDS = frozenset({'source_code', 'stdin', 'expected_output', 'stdout', 'stderr', 'compile_output', 'message'})
LOST_AFTER_S = 30.0
"""A record still queued this long after its deadline lost its result (its gateway process stopped)."""
_SIGNAL_STATUS = {signal.SIGSEGV: 7, signal.SIGXFSZ: 8, signal.SIGFPE: 9, signal.SIGABRT: 10}


def name_of(language_id: int) -> str:
    """A language's Judge0 name with the judge's toolchain version, e.g. ``Python (3.11.2)``."""
    language = LANGUAGES[language_id]
    return language.name(show(toolchains.version(language.judge)))


def now() -> str:
    """Judge0's timestamp format."""
    return datetime.now(UTC).strftime('%Y-%m-%dT%H:%M:%S.%f')[:-3] + 'Z'


def parse_fields(text: str | None) -> tuple[str, ...] | str:
    """The requested fields, or the error text of invalid ones (Judge0's ``fields`` parameter)."""
    names = [n for n in (text or '').split(',') if n]
    if '*' in names:
        return ALL_FIELDS
    bad = [n for n in names if n not in ALL_FIELDS]
    if bad:
        return f'invalid fields: [{", ".join(bad)}]'
    return tuple(names) or DEFAULT_FIELDS


def outcome(result: ResultDict, redirect: bool) -> dict[str, Any]:
    """The fields a finished submission gets from the judge's result."""
    verdict = verdict_of(result)
    used = usage(result)
    done: dict[str, Any] = {'finished_at': now(), 'stdout': None, 'stderr': None, 'compile_output': None}
    done |= {'message': None, 'time': None, 'wall_time': None, 'memory': None, 'exit_code': None, 'exit_signal': None}
    if infra(result):
        why = result.get('error') or 'the judge did not run it before its deadline'
        return done | {'status_id': 13, 'message': f'{verdict.value}: {why}'}
    compiled = result.get('compile')
    if verdict is Verdict.COMPILE_ERROR:
        return done | {'status_id': 6, 'compile_output': compiled['stderr'] if compiled else None}
    stdout, stderr = result.get('stdout') or '', result.get('stderr') or ''
    if redirect:
        stdout, stderr = stdout + stderr, ''
    number = used.get('signal')
    code = result.get('exit_code')
    done |= {
        'stdout': stdout or None,
        'stderr': stderr or None,
        'compile_output': (compiled['stderr'] or None) if compiled else None,
        'time': f'{float(used.get("cpu_s", 0.0)):.3f}',
        'wall_time': f'{float(result.get("cost") or 0.0):.3f}',
        'memory': int(used.get('max_rss_kb', 0)),
        'exit_code': 0 if number else code,
        'exit_signal': number,
    }
    if verdict is Verdict.TIME_LIMIT:
        return done | {'status_id': 5, 'message': 'Time limit exceeded'}
    if verdict in (Verdict.ACCEPTED, Verdict.WRONG_ANSWER):
        return done | {'status_id': 3 if verdict is Verdict.ACCEPTED else 4}
    if number:
        return done | {'status_id': _SIGNAL_STATUS.get(number, 12), 'message': f'Caught fatal signal {number}'}
    if verdict is Verdict.RUNTIME_ERROR and code:
        return done | {'status_id': 11, 'message': f'Exited with error status {code}'}
    limit = 'Memory limit exceeded' if verdict is Verdict.MEMORY_LIMIT else 'Output limit exceeded'
    return done | {'status_id': 12, 'message': limit}


def render(record: dict[str, Any], fields: tuple[str, ...], base64_encoded: bool, language_name: str) -> dict[str, Any]:
    """The record as Judge0 shows it: ``fields`` only, text base64-encoded when asked."""
    status_id = record.get('status_id') or 1
    if status_id == 1 and time.time() > float(record.get('deadline') or 0) + LOST_AFTER_S:
        status_id, record = 13, record | {'message': 'the judge lost this submission (its gateway stopped)'}
    out: dict[str, Any] = {}
    for name in fields:
        if name == 'status':
            out[name] = {'id': status_id, 'description': STATUSES[status_id]}
        elif name == 'status_id':
            out[name] = status_id
        elif name == 'language':
            out[name] = {'id': record['language_id'], 'name': language_name}
        elif name in TEXT_FIELDS and base64_encoded and record.get(name) is not None:
            out[name] = base64.b64encode(str(record[name]).encode('utf-8')).decode('ascii')
        else:
            out[name] = record.get(name)
    return out
