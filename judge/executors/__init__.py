"""The explicit registry of languages (the `type` field of a submission)."""

from __future__ import annotations

from judge.executors.base import Compiled, Executor, RunExtras, Toolchain
from judge.executors.bash import BashExecutor
from judge.executors.c import CExecutor
from judge.executors.compiled import CompiledExecutor
from judge.executors.cpp import CppExecutor
from judge.executors.go import GoExecutor
from judge.executors.java import JavaExecutor
from judge.executors.javascript import JavaScriptExecutor
from judge.executors.python import PythonExecutor
from judge.executors.rust import RustExecutor

EXECUTORS: dict[str, type[Executor]] = {
    cls.language: cls
    for cls in (
        PythonExecutor,
        CppExecutor,
        CExecutor,
        JavaExecutor,
        JavaScriptExecutor,
        GoExecutor,
        RustExecutor,
        BashExecutor,
    )
}

__all__ = [
    'EXECUTORS',
    'BashExecutor',
    'CExecutor',
    'Compiled',
    'CompiledExecutor',
    'CppExecutor',
    'Executor',
    'GoExecutor',
    'JavaExecutor',
    'JavaScriptExecutor',
    'PythonExecutor',
    'RunExtras',
    'RustExecutor',
    'Toolchain',
]
