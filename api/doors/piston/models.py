"""Piston v2's execute request, as its clients send it (`api.doors.piston.routes`).

Names and units are Piston's (``api/src/api/v2.js``): timeouts and CPU times in milliseconds, memory in
bytes (``-1``: none).  A request Piston would refuse is refused with Piston's own answer, HTTP 400
``{"message": ...}`` (`api.doors.piston.bad_request`).
"""

from __future__ import annotations

import base64
import binascii
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from judge.contracts.http import check_text


class PistonFile(BaseModel):
    """One file of the job; the first UTF-8 one is the program."""

    model_config = ConfigDict(extra='ignore')

    name: str | None = None
    content: str
    encoding: Literal['utf8', 'base64', 'hex'] = 'utf8'

    @field_validator('encoding', mode='before')
    @classmethod
    def _encoding(cls, value: object) -> object:
        return value if value in ('base64', 'hex') else 'utf8'  # Piston reads any other value as utf8

    @field_validator('content')
    @classmethod
    def _content(cls, value: str) -> str:
        check_text(value)
        return value

    def data(self) -> bytes:
        """The file's bytes; `ValueError` when its content is not in its encoding."""
        try:
            if self.encoding == 'base64':
                return base64.b64decode(''.join(self.content.split()), validate=True)
            if self.encoding == 'hex':
                return bytes.fromhex(self.content)
        except (binascii.Error, ValueError):
            raise ValueError(f'file {self.name or ""!r} is not valid {self.encoding}') from None
        return self.content.encode('utf-8')


class ExecuteRequest(BaseModel):
    """``POST /api/v2/execute``."""

    model_config = ConfigDict(extra='ignore')

    language: str = Field(..., description='a language name or alias (GET /api/v2/runtimes)')
    version: str = Field(..., description='a SemVer selector, `*` for any')
    files: list[PistonFile] = Field(..., description='the program first, then any other files of its directory')
    stdin: str = ''
    args: list[str] = Field(default_factory=list)
    compile_timeout: float | None = Field(None, description='ms; accepted (compiles run under the judge limit)')
    run_timeout: float | None = Field(None, description='ms; lowers the judge time limit, never raises it')
    compile_cpu_time: float | None = Field(None, description='ms; accepted, not applied')
    run_cpu_time: float | None = Field(None, description='ms; accepted, not applied')
    compile_memory_limit: int | None = Field(None, description='bytes; accepted (compiles run under the judge limit)')
    run_memory_limit: int | None = Field(None, description='bytes, -1: none; lowers the judge limit, never raises it')

    @field_validator('stdin')
    @classmethod
    def _stdin(cls, value: str) -> str:
        check_text(value)
        return value

    @field_validator('args')
    @classmethod
    def _args(cls, value: list[str]) -> list[str]:
        for arg in value:
            check_text(arg)
            if '\0' in arg:
                raise ValueError('an argument may not contain NUL')
        return value

    @field_validator('compile_timeout', 'run_timeout', 'compile_cpu_time', 'run_cpu_time')
    @classmethod
    def _non_negative(cls, value: float | None) -> float | None:
        if value is not None and value < 0:
            raise ValueError('must be non-negative')
        return value

    @field_validator('compile_memory_limit', 'run_memory_limit')
    @classmethod
    def _memory(cls, value: int | None) -> int | None:
        if value is not None and value < -1:
            raise ValueError('must be -1 (no limit) or non-negative')
        return value


class PackageRequest(BaseModel):
    """``POST``/``DELETE /api/v2/packages``."""

    model_config = ConfigDict(extra='ignore')

    language: str
    version: str


class Stage(BaseModel):
    """A stage of the answer (``compile`` or ``run``)."""

    stdout: str
    stderr: str
    output: str
    code: int | None
    signal: str | None
    message: str | None
    status: str | None = Field(None, description='RE, SG, TO, OL or null')
    memory: int | None = Field(None, description='bytes')
    cpu_time: int | None = Field(None, description='ms')
    wall_time: int | None = Field(None, description='ms')


class ExecuteResponse(BaseModel):
    """The answer of ``/api/v2/execute``."""

    language: str
    version: str
    run: Stage
    compile: Stage | None = None
