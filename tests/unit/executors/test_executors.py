"""The executors: interpreted languages derive from `Executor`, compiled ones from `CompiledExecutor`,
and every request they send the slot (command lines, files, compile keys and cache paths) is the one
the code of 383bec0 sent (`tests/unit/executors/pins`), but for the compile's file-size bound, which is now
`JUDGE_COMPILE_ARTIFACT_MB` (64 MiB) instead of 256 MiB."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from judge.executors import EXECUTORS, CompiledExecutor, Executor, base, c, compiled, cpp, toolchain
from tests.unit.executors.capture import (
    COMPILED,
    PINS,
    SETTINGS,
    capture_compiles,
    capture_runs,
    faked_tools,
    settings_of,
)

pytestmark = pytest.mark.usefixtures('quiet_pch_build')


@pytest.mark.parametrize('name', SETTINGS)
def test_every_run_request_is_the_one_of_383bec0(name: str) -> None:
    with faked_tools(static=True):
        assert capture_runs(settings_of(name)) == PINS[name]['runs']


@pytest.mark.parametrize('name', SETTINGS)
@pytest.mark.parametrize('static', [True, False])
def test_every_compile_request_key_and_cache_path_is_the_one_of_383bec0(name: str, static: bool) -> None:
    """Unchanged compile keys and cache paths: the nodes' compile caches stay valid."""
    with faked_tools(static):
        got = capture_compiles(settings_of(name), static)
    assert got == {k: v for k, v in PINS[name]['compiles'].items() if k.endswith(f'static={static}')}


def test_the_registry_is_unchanged() -> None:
    assert {language: cls.__name__ for language, cls in EXECUTORS.items()} == {
        'python': 'PythonExecutor',
        'cpp': 'CppExecutor',
        'c': 'CExecutor',
        'java': 'JavaExecutor',
        'javascript': 'JavaScriptExecutor',
        'go': 'GoExecutor',
        'rust': 'RustExecutor',
        'bash': 'BashExecutor',
    }


def test_compiled_languages_derive_from_compiled_executor_and_interpreted_ones_from_executor() -> None:
    assert {lang for lang, cls in EXECUTORS.items() if issubclass(cls, CompiledExecutor)} == set(COMPILED)
    for language in set(EXECUTORS) - set(COMPILED):
        assert issubclass(EXECUTORS[language], Executor), language
    for name in ('compile_argv', 'compile_key', 'compile_limits', 'cache_path', 'artifact_name'):
        assert not hasattr(Executor, name), name
        assert name in vars(CompiledExecutor) or name in CompiledExecutor.__annotations__, name


def test_the_base_knows_nothing_of_compiling() -> None:
    tree = ast.parse(Path(base.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {'judge.executors.compiled', 'judge.executors.cache'} & imported


def test_static_linking_is_a_toolchain_question() -> None:
    assert c.can_link_static is toolchain.can_link_static
    assert cpp.can_link_static is toolchain.can_link_static
    assert compiled.CompiledExecutor.compile is not base.Executor.compile
