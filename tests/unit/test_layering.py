"""The package graph: which layer may import which, and which libraries each may use (AST, no imports run).

Layers, each importing only those to its right (and itself):

    api, celeryconfig -> judge.transport -> core
    judge.worker -> judge.transport, judge.executors, judge.sandbox, judge.runtime -> core
    judge.executors -> judge.sandbox

``core`` is the `judge` package's root modules and `judge.contracts`.  The sandbox imports nothing of
the judge outside itself (its slot server and warm parents run without the judge's dependencies), and
`toolkit` nothing of `judge` or `api`.

Within `judge.transport`, `judge.transport.gateway` is imported only by the gateway's side (`api` and
the gateway package itself), `judge.transport.worker` only by the worker's side (`judge.worker` and the
worker package itself); what is shared (the rest of `judge.transport`, ``celeryconfig``) imports neither.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

MAY_IMPORT: dict[str, set[str]] = {
    'core': {'core'},
    'judge.runtime': {'core'},
    'judge.sandbox': set(),
    'judge.executors': {'judge.sandbox', 'core'},
    'judge.transport': {'core'},
    'judge.worker': {'judge.transport', 'judge.executors', 'judge.sandbox', 'judge.runtime', 'core'},
    'judge.stack': {'core'},
    'api': {'judge.transport', 'core'},
    'celeryconfig': {'judge.transport', 'core'},
    'toolkit': set(),
}
"""Layer -> the other layers it may import (lazy imports inside functions count too)."""

LIBRARIES = ('celery', 'kombu', 'redis', 'fastapi', 'aiohttp', 'pydantic', 'uvicorn')
NO_LIBRARIES = ('judge.sandbox', 'judge.executors', 'judge.runtime')
"""Layers that use none of `LIBRARIES`: they run in the slot server, or beside it in the pool process."""
PURE = ('judge/checker.py', 'judge/verdict.py', 'judge/errors.py', 'judge/worker/runner.py')
"""Modules of pure logic: none of `LIBRARIES`."""
SIDES: dict[str, tuple[str, ...]] = {
    'judge.transport.gateway': ('api', 'judge.transport.gateway'),
    'judge.transport.worker': ('judge.worker', 'judge.transport.worker'),
}
"""A process's own transport package -> the only modules (and their sub-modules) that may import it."""


def layer_of(module: str) -> str:
    """The layer of a dotted module name."""
    parts = module.split('.')
    if parts[0] != 'judge':
        return parts[0]
    if len(parts) > 1 and f'judge.{parts[1]}' in MAY_IMPORT:
        return f'judge.{parts[1]}'
    return 'core'


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix('').parts)
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def imported(path: Path) -> set[str]:
    """Every absolute module name ``path`` imports, anywhere in the file."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f'{node.module}.{a.name}' for a in node.names)
    return names


def ours(name: str) -> bool:
    return name.split('.')[0] in ('judge', 'api', 'toolkit', 'celeryconfig')


SOURCES = sorted(
    [
        *ROOT.joinpath('judge').rglob('*.py'),
        *ROOT.joinpath('api').rglob('*.py'),
        *ROOT.joinpath('toolkit').rglob('*.py'),
    ]
) + [ROOT / 'celeryconfig.py']


@pytest.mark.parametrize('path', SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_module_imports_only_the_layers_below_it(path: Path) -> None:
    mine = layer_of(module_name(path))
    allowed = MAY_IMPORT[mine] | {mine}
    bad = sorted(n for n in imported(path) if ours(n) and n != 'judge' and layer_of(n) not in allowed)
    if mine == 'judge.sandbox':  # `import judge.sandbox.x` runs judge/__init__ (the version only)
        bad = [n for n in bad if n != 'judge']
    assert not bad, f'{mine} may not import {bad}'


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(f'{package}.')


@pytest.mark.parametrize('path', SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_side_of_the_transport_is_imported_only_by_its_process(path: Path) -> None:
    """The gateway's transport modules stay out of the worker and the worker's out of the gateway."""
    me = module_name(path)
    for package, importers in SIDES.items():
        if not any(within(me, i) for i in importers):
            bad = sorted(n for n in imported(path) if within(n, package))
            assert not bad, f'{me} may not import {bad}'


def test_the_library_free_layers_use_no_library() -> None:
    paths = [p for p in SOURCES if layer_of(module_name(p)) in NO_LIBRARIES] + [ROOT / p for p in PURE]
    assert len(paths) > 40
    for path in paths:
        bad = {n for n in imported(path) if n.split('.')[0] in LIBRARIES}
        assert not bad, f'{path.relative_to(ROOT)} imports {bad}'


def test_the_graph_has_no_cycle_between_modules() -> None:
    """No import cycle between our modules at import time (module level, not inside functions)."""
    graph: dict[str, set[str]] = {}
    names = {module_name(p) for p in SOURCES}
    for path in SOURCES:
        deps: set[str] = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                deps.update(n for n in imported_from(node) if n in names)
        graph[module_name(path)] = deps - {module_name(path)}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for dep in graph.get(node, ()):
            if state.get(dep) == 1:
                raise AssertionError(' -> '.join([*trail[trail.index(dep) :], dep]) if dep in trail else dep)
            if dep not in state:
                visit(dep, [*trail, dep])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def imported_from(node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    if not node.module or node.level:
        return set()
    modules = {f'{node.module}.{a.name}' for a in node.names}
    return modules if all(ROOT.joinpath(*m.split('.')).with_suffix('.py').is_file() for m in modules) else {node.module}


def test_the_process_folders_exist_and_modules_stay_small() -> None:
    folders = ['judge/worker', 'judge/transport/internals', 'judge/transport/sessions']
    folders += ['judge/transport/gateway', 'judge/transport/worker']
    folders += ['toolkit/sessions', 'toolkit/rewards', 'toolkit/verl', 'toolkit/rlinf']
    folders += ['toolkit/evaluate', 'toolkit/bench']
    folders += ['judge/sandbox/server', 'judge/sandbox/server/warm', 'judge/sandbox/server/files']
    folders += ['judge/sandbox/zygote', 'judge/sandbox/kernel']
    for folder in folders:
        assert (ROOT / folder / '__init__.py').is_file(), folder
    for path in SOURCES:
        lines = len(path.read_text().splitlines())
        assert lines <= 320, f'{path.relative_to(ROOT)}: {lines} lines, split it (about 300 at most)'


MAX_MODULES_PER_FOLDER = 14
"""A folder of product code past about a dozen modules is grouped into sub-packages by process or role."""


def _crowded(folders: set[Path]) -> list[str]:
    """The folders holding more than `MAX_MODULES_PER_FOLDER` modules (``__init__``, ``__main__`` and
    ``conftest`` aside), with their counts."""
    crowded = []
    for folder in sorted(folders):
        modules = [p for p in folder.glob('*.py') if p.name not in ('__init__.py', '__main__.py', 'conftest.py')]
        if len(modules) > MAX_MODULES_PER_FOLDER:
            crowded.append(f'{folder.relative_to(ROOT)} holds {len(modules)} modules')
    return crowded


def test_no_product_folder_outgrows_a_dozen_modules() -> None:
    crowded = _crowded({path.parent for path in SOURCES})
    assert not crowded, f'group them into sub-packages by role: {crowded}'


def test_no_test_folder_outgrows_a_dozen_modules() -> None:
    crowded = _crowded({path.parent for path in ROOT.joinpath('tests').rglob('*.py')})
    assert not crowded, f'group them into sub-packages by what they test: {crowded}'


def test_the_gateway_does_not_load_worker_code() -> None:
    code = (
        'import sys, api.main; '
        'print(sorted(m for m in sys.modules if m.startswith(("judge.worker", "judge.executors", "judge.sandbox", '
        '"judge.runtime", "judge.transport.worker"))))'
    )
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == '[]'


@pytest.mark.parametrize('module', ['judge.sandbox.zygote.main', 'judge.sandbox.kernel.seccomp'])
def test_the_warm_parent_and_kernel_modules_are_import_light(module: str) -> None:
    """What a zygote imports stays in every child it forks (`judge.sandbox.fdio` lists what is allowed)."""
    code = (
        'import sys; before = set(sys.modules); sys.path.insert(0, sys.argv[1]); '
        f'import {module}; print(" ".join(sorted(set(sys.modules) - before)))'
    )
    out = subprocess.run([sys.executable, '-I', '-c', code, str(ROOT)], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    assert module in loaded
    heavy = {'typing', 're', 'json', 'enum', 'collections', 'socket', 'signal', 'logging', 'threading', 'celery'}
    assert not heavy & loaded, sorted(heavy & loaded)
    assert not {m for m in loaded if m.startswith('judge.') and not m.startswith(('judge.sandbox', 'judge.version'))}
