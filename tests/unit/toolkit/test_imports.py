"""The toolkit stands alone: it never imports judge or api, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import toolkit


def test_toolkit_never_imports_judge_or_api() -> None:
    import ast

    for path in Path(toolkit.__file__).parent.rglob('*.py'):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not [n for n in names if n.split('.')[0] in ('judge', 'api', 'torch')], (path, names)


def test_import_toolkit_is_light() -> None:
    code = (
        'import importlib.util, sys, toolkit, toolkit.rlinf, toolkit.rlinf.ext, toolkit.rlinf.reward, toolkit.rewards\n'
        'import toolkit.evaluate.cli, toolkit.schemas\n'
        'heavy = lambda: [m for m in ("judge", "api", "torch", "verl", "rlinf", "ray") if m in sys.modules]\n'
        'print(heavy())\n'
        'import toolkit.verl.tools\n'  # imports verl (and so torch) only when verl is installed
        'print(heavy() == (["torch", "verl", "ray"] if importlib.util.find_spec("verl") else []))'
    )
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ['[]', 'True']
