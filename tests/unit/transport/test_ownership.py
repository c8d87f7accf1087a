"""`judge.transport` owns the plumbing: nothing outside it imports redis-py or kombu's transports, names a
Redis key or reaches into a library's private names (read from the sources, nothing imported)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support.paths import ROOT

OUTSIDE = [
    p
    for p in [*ROOT.joinpath('judge').rglob('*.py'), *ROOT.joinpath('api').glob('*.py'), ROOT / 'celeryconfig.py']
    if 'transport' not in p.parts
]


# Redis key names and kombu's internal names: written only in judge/transport.
_KEY_LITERAL = re.compile(r'^(judge:(reply|live|cancelled|nodes|inflight|gateways)|_kombu\.|unacked)')


def _tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text(), str(path))


def test_only_the_transport_imports_redis_or_kombu_transports() -> None:
    for path in OUTSIDE:
        for node in ast.walk(_tree(path)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split('.')[0] != 'redis', f'{path.relative_to(ROOT)} imports {name}'
                assert not name.startswith(('kombu.transport', 'celery.worker')), f'{path.relative_to(ROOT)}: {name}'


def test_no_redis_key_names_outside_the_transport() -> None:
    for path in [*OUTSIDE, *ROOT.joinpath('toolkit').rglob('*.py')]:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not _KEY_LITERAL.match(node.value), f'{path.relative_to(ROOT)}: {node.value!r}'


def test_no_private_library_names_outside_the_transport() -> None:
    """Outside judge/transport (and the sandbox, which uses no library), no ``x._private`` of another object."""
    mine = [p for p in OUTSIDE if not {'sandbox', 'executors'} & set(p.parts)]
    for path in mine:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Attribute) and node.attr.startswith('_') and not node.attr.startswith('__'):
                owner = node.value
                assert isinstance(owner, ast.Name) and owner.id in ('self', 'cls'), (
                    f'{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}'
                )
