"""The submission runtime's build key (`judge.runtime`): it follows every input and nothing else (no build)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from judge import runtime
from judge.runtime import RuntimeSpec, build_key, tree_hash


def test_the_build_key_follows_every_input_and_ignores_comments(tmp_path: Path) -> None:
    mods, reqs = tmp_path / 'mods', tmp_path / 'extra.txt'
    mods.mkdir()
    (mods / 'scorer.py').write_text('def compute_score(a, r):\n    return 1.0\n')
    reqs.write_text('pandas==3.1.1\n')
    base = RuntimeSpec(root=str(tmp_path), base_python=sys.executable)
    with_mods = RuntimeSpec(root=str(tmp_path), base_python=sys.executable, modules=str(mods))
    keys = {build_key(base), build_key(with_mods)}
    keys.add(build_key(RuntimeSpec(root=str(tmp_path), base_python=sys.executable, requirements=str(reqs))))
    assert len(keys) == 3
    before = tree_hash(str(mods))
    (mods / '__pycache__').mkdir()
    (mods / '__pycache__' / 'scorer.cpython-311.pyc').write_bytes(b'cache')
    assert tree_hash(str(mods)) == before, 'byte-code caches are not inputs'
    (mods / 'scorer.py').write_text('def compute_score(a, r):\n    return 0.0\n')
    assert build_key(with_mods) not in keys
    reqs.write_text('# a comment\npandas==3.1.1  # pinned\n\n')
    assert build_key(RuntimeSpec(root=str(tmp_path), base_python=sys.executable, requirements=str(reqs))) in keys
    with pytest.raises(runtime.RuntimeMissing):
        runtime.locate(RuntimeSpec(root=str(tmp_path), base_python=sys.executable))
