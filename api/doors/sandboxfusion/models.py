"""SandboxFusion's request and response models, as its clients send and read them (`api.doors.sandboxfusion.routes`).

Field names, defaults and enum values follow SandboxFusion's server (``sandbox/server/sandbox_api.py``,
``sandbox/runners/types.py``); ``language`` lists only the languages this judge runs
(`SF_LANGUAGES`), so any other is refused as SandboxFusion refuses a language it does not know: 422
with pydantic's ``literal_error``.  ``language`` defaults to ``python`` (SandboxFusion requires it).
"""

from __future__ import annotations

import enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from judge import workfiles
from judge.contracts.http import check_text

SF_LANGUAGES: dict[str, str] = {
    'python': 'python',
    'cpp': 'cpp',
    'nodejs': 'javascript',
    'go': 'go',
    'java': 'java',
    'bash': 'bash',
    'rust': 'rust',
}
"""SandboxFusion's language name -> the judge's `type`."""

SFLanguage = Literal['python', 'cpp', 'nodejs', 'go', 'java', 'bash', 'rust']


class _Request(BaseModel):
    model_config = ConfigDict(extra='ignore')

    memory_limit_MB: int = Field(-1, description='memory limit, MiB (-1: the judge limit; never above it)')
    files: dict[str, str | None] = Field(
        default_factory=dict, description='relative path -> base64 content, written before the run'
    )
    fetch_files: list[str] = Field(default_factory=list, description='relative paths returned base64 in `files`')

    @field_validator('files')
    @classmethod
    def _files(cls, value: dict[str, str | None]) -> dict[str, str | None]:
        return {
            workfiles.check_path(path): None if content is None else workfiles.check_base64(path, content)
            for path, content in value.items()
        }

    @field_validator('fetch_files')
    @classmethod
    def _fetch(cls, value: list[str]) -> list[str]:
        return [workfiles.check_path(path) for path in value]

    def work_files(self) -> dict[str, str]:
        """The files to write (SandboxFusion skips a null content)."""
        return {path: content for path, content in self.files.items() if content is not None}


class RunCodeRequest(_Request):
    """``POST /run_code``."""

    compile_timeout: float = Field(10, description='accepted; compiles run under the judge compile limit, cached')
    run_timeout: float = Field(10, description='run time limit, seconds (never above the judge limit)')
    code: str = Field(..., description='the code to run')
    stdin: str | None = Field(None, description='standard input')
    language: SFLanguage = Field('python', description='the language (SandboxFusion name)')

    @field_validator('code', 'stdin')
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        return check_text(value)


class RunJupyterRequest(_Request):
    """``POST /run_jupyter``: cells run in order in one fresh interpreter."""

    cells: list[str] = Field(..., description='code cells, run in order; state persists between them')
    cell_timeout: float = Field(0, description='time limit of each cell, seconds (0: none)')
    total_timeout: float = Field(45, description='time limit of all cells (never above the judge limit)')
    kernel: Literal['python3'] = 'python3'

    @field_validator('cells')
    @classmethod
    def _cells(cls, value: list[str]) -> list[str]:
        for cell in value:
            check_text(cell)
        return value


class RunStatus(enum.StrEnum):
    """The answer's ``status``."""

    SUCCESS = 'Success'
    FAILED = 'Failed'
    SANDBOX_ERROR = 'SandboxError'


class CommandRunStatus(enum.StrEnum):
    """A step's ``status``."""

    FINISHED = 'Finished'
    ERROR = 'Error'
    TIME_LIMIT_EXCEEDED = 'TimeLimitExceeded'


class CommandRunResult(BaseModel):
    """One step (compile or run)."""

    status: CommandRunStatus
    execution_time: float | None = None
    return_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None


class RunCodeResponse(BaseModel):
    """The answer of ``/run_code``."""

    status: RunStatus
    message: str
    compile_result: CommandRunResult | None = None
    run_result: CommandRunResult | None = None
    executor_pod_name: str | None = None
    files: dict[str, str] = Field(default_factory=dict)


class CellRunResult(BaseModel):
    """One cell's output."""

    stdout: str
    stderr: str
    display: list[dict[str, Any]]
    error: list[dict[str, Any]]


class RunJupyterResponse(BaseModel):
    """The answer of ``/run_jupyter``."""

    status: RunStatus
    message: str
    driver: CommandRunResult | None = None
    cells: list[CellRunResult] = Field(default_factory=list)
    executor_pod_name: str | None = None
    files: dict[str, str] = Field(default_factory=dict)
