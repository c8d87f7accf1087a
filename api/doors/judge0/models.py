"""Judge0 CE's submission request, languages and statuses, as its clients use them (`api.doors.judge0.routes`).

Field names and units are Judge0's (``app/models/submission.rb``): seconds for times, kilobytes for
memory.  Language ids are Judge0 CE 1.13.1's for the judge's eight languages.  A request Judge0 would
refuse is refused with Judge0's own answer: HTTP 422 ``{"<field>": ["<problem>"]}``
(`validation_answer`).
"""

from __future__ import annotations

import base64
import binascii
import io
import shlex
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import Response
from pydantic import BaseModel, ConfigDict, Field, RootModel

from api.doors.answer import json_answer
from judge import workfiles

VERSION = '1.13.1'
"""The Judge0 CE version whose language ids the door uses (the SDK maps its aliases by it)."""
MAX_EXTRACT_BYTES = 10240 * 1024
"""``additional_files`` unpacked at most (Judge0's ``MAX_EXTRACT_SIZE``, 10240 KB)."""


@dataclass(frozen=True)
class Language:
    """One Judge0 language on one of the judge's."""

    id: int
    label: str
    """Its name without the version, e.g. ``C++ (GCC``; the judge's toolchain version completes it."""
    judge: str
    source_file: str
    compile_cmd: str | None
    run_cmd: str

    def name(self, version: str) -> str:
        """``Python (3.11.2)``, ``C++ (GCC 12.2.0)``."""
        return f'{self.label} {version})' if '(' in self.label else f'{self.label} ({version})'


LANGUAGES = {
    lang.id: lang
    for lang in (
        Language(46, 'Bash', 'bash', 'script.sh', None, 'bash script.sh'),
        Language(50, 'C (GCC', 'c', 'main.c', 'gcc -O2 main.c', './a.out'),
        Language(52, 'C++ (GCC', 'cpp', 'main.cpp', 'g++ -std=gnu++17 -O2 main.cpp', './a.out'),
        Language(60, 'Go', 'go', 'main.go', 'go build main.go', './main'),
        Language(62, 'Java (OpenJDK', 'java', 'Main.java', 'javac Main.java', 'java Main'),
        Language(63, 'JavaScript (Node.js', 'javascript', 'script.js', None, 'node script.js'),
        Language(71, 'Python', 'python', 'script.py', None, 'python3 script.py'),
        Language(73, 'Rust', 'rust', 'main.rs', 'rustc -O main.rs', './main'),
    )
}

STATUSES = {
    1: 'In Queue',
    2: 'Processing',
    3: 'Accepted',
    4: 'Wrong Answer',
    5: 'Time Limit Exceeded',
    6: 'Compilation Error',
    7: 'Runtime Error (SIGSEGV)',
    8: 'Runtime Error (SIGXFSZ)',
    9: 'Runtime Error (SIGFPE)',
    10: 'Runtime Error (SIGABRT)',
    11: 'Runtime Error (NZEC)',
    12: 'Runtime Error (Other)',
    13: 'Internal Error',
    14: 'Exec Format Error',
}


class Refusal(ValueError):
    """A submission Judge0 would refuse: its field and the problem, answered 422."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f'{field} {problem}')
        self.field, self.problem = field, problem


class SubmissionRequest(BaseModel):
    """``POST /submissions`` (and one element of a batch)."""

    model_config = ConfigDict(extra='ignore')

    source_code: str | None = None
    language_id: int | None = None
    stdin: str | None = None
    expected_output: str | None = None
    cpu_time_limit: float | None = Field(None, ge=0, description='seconds; lowers the judge limit')
    cpu_extra_time: float | None = Field(None, ge=0, description='seconds; added to cpu_time_limit')
    wall_time_limit: float | None = Field(None, ge=0, description='seconds; lowers the judge limit')
    memory_limit: int | None = Field(None, ge=0, description='KB; lowers the judge limit')
    stack_limit: int | None = Field(None, ge=0, description='accepted, not applied')
    max_processes_and_or_threads: int | None = Field(None, ge=0, description='accepted, not applied')
    enable_per_process_and_thread_time_limit: bool | None = None
    enable_per_process_and_thread_memory_limit: bool | None = None
    max_file_size: int | None = Field(None, ge=0, description='accepted, not applied')
    number_of_runs: int | None = Field(None, ge=1, description='accepted; each submission runs once')
    compiler_options: str | None = Field(None, max_length=512)
    command_line_arguments: str | None = Field(None, max_length=512)
    redirect_stderr_to_stdout: bool | None = None
    callback_url: str | None = None
    additional_files: str | None = Field(None, description='base64 of a zip, unpacked beside the program')
    enable_network: bool | None = None

    def decoded(self, field: str, base64_encoded: bool) -> str | None:
        """A text field, decoded from base64 when the request says so."""
        value: str | None = getattr(self, field)
        if value is None or not base64_encoded:
            return value
        try:
            return base64.b64decode(''.join(value.split()), validate=True).decode('utf-8', 'replace')
        except (binascii.Error, ValueError):
            raise Refusal(field, 'is not valid base64') from None

    def checked(self) -> Language:
        """Its language, after Judge0's checks and the door's (features the judge does not have)."""
        if not self.source_code:
            raise Refusal('source_code', "can't be blank")
        if self.language_id is None:
            raise Refusal('language_id', "can't be blank")
        if self.language_id not in LANGUAGES:
            raise Refusal('language_id', f"language with id {self.language_id} doesn't exist")
        if self.enable_network:
            raise Refusal('enable_network', 'setting network is not allowed')
        if self.callback_url:
            raise Refusal('callback_url', 'callbacks are not enabled')
        if self.compiler_options:
            raise Refusal('compiler_options', 'setting compiler options is not allowed')
        return LANGUAGES[self.language_id]

    def arguments(self) -> list[str]:
        """``command_line_arguments``, split as a shell splits them."""
        try:
            return shlex.split(self.command_line_arguments or '')
        except ValueError as exc:
            raise Refusal('command_line_arguments', str(exc)) from None

    def files(self) -> dict[str, str]:
        """``additional_files`` (base64 of a zip) as the payload's files, path -> base64."""
        if not self.additional_files:
            return {}
        try:
            archive = zipfile.ZipFile(io.BytesIO(base64.b64decode(''.join(self.additional_files.split()))))
            members = [m for m in archive.infolist() if not m.is_dir()]
            if sum(m.file_size for m in members) > MAX_EXTRACT_BYTES:
                raise Refusal('additional_files', f'unpack to more than {MAX_EXTRACT_BYTES} bytes')
            return {workfiles.check_path(m.filename): workfiles.encode(archive.read(m)) for m in members}
        except Refusal:
            raise
        except (binascii.Error, ValueError, zipfile.BadZipFile, OSError) as exc:
            raise Refusal('additional_files', f'is not a base64 zip archive with relative paths ({exc})') from None


class BatchRequest(BaseModel):
    """``POST /submissions/batch``."""

    model_config = ConfigDict(extra='ignore')

    submissions: list[dict[str, Any]] = Field(default_factory=list)


def refusal(field: str, problem: str) -> Response:
    """Judge0's 422 for one field."""
    return json_answer({field: [problem]}, 422)


def error(message: str, status: int = 400) -> Response:
    """Judge0's ``{"error": ...}`` answer."""
    return json_answer({'error': message}, status)


def validation_answer(errors: Sequence[Any]) -> Response:
    """Judge0's 422 for a request that fails validation: each field and its problems."""
    fields: dict[str, list[str]] = {}
    for problem in errors:
        where = '.'.join(str(part) for part in problem.get('loc', ())[1:]) or 'body'
        fields.setdefault(where, []).append(str(problem.get('msg', 'is invalid')))
    return json_answer(fields, 422)


class SubmissionAnswer(BaseModel):
    """The answer of ``POST /submissions``: the requested fields (``wait=true``) or ``{"token"}``."""

    model_config = ConfigDict(extra='allow')

    token: str | None = None


class BatchItem(BaseModel):
    """One element of the answer of ``POST /submissions/batch``: a token, or the submission's errors."""

    model_config = ConfigDict(extra='allow')

    token: str | None = None


class BatchAnswer(RootModel[list[BatchItem]]):
    """The answer of ``POST /submissions/batch``, in submission order."""
