"""The explicit registry of languages."""

from __future__ import annotations

from judge.executors.base import Compiled, Executor, Toolchain
from judge.executors.cpp import CppExecutor
from judge.executors.python import PythonExecutor

EXECUTORS: dict[str, type[Executor]] = {
    PythonExecutor.language: PythonExecutor,
    CppExecutor.language: CppExecutor,
}

__all__ = ['EXECUTORS', 'Compiled', 'CppExecutor', 'Executor', 'PythonExecutor', 'Toolchain']
