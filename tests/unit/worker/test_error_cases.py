"""Error-case capture (`judge.worker.error_cases`): layout, hostile ids, symlinks, budget, never blocking."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from judge.worker.error_cases import ErrorCaseWriter, safe_name, should_save


def test_safe_name_blocks_traversal() -> None:
    for hostile in ('../../etc/passwd', '/abs/path', '..', '.', '', 'a/b', 'x\x00y', 'é' * 300):
        name = safe_name(hostile)
        assert '/' not in name and name not in ('.', '..') and not name.startswith('.') and len(name) <= 100
    assert safe_name('plain-id_1.2') == 'plain-id_1.2'
    assert safe_name('../a') != safe_name('.._a')  # changed names carry a hash of the original


def test_writes_upstream_layout(tmp_path: Path) -> None:
    writer = ErrorCaseWriter(str(tmp_path / 'cases'))
    sub = {'sub_id': 's1', 'type': 'python', 'solution': 'print(1)'}
    result = {'sub_id': 's1', 'success': False, 'reason': 'internal_error'}
    assert should_save(result) and not should_save({'success': True})
    writer.submit(sub, result, 'Traceback: boom')
    writer.flush()
    case = tmp_path / 'cases' / 's1'
    assert json.loads((case / 'submission.json').read_text())['solution'] == 'print(1)'
    assert (case / 'solution.txt').read_text() == 'print(1)'
    assert json.loads((case / 'result.json').read_text())['reason'] == 'internal_error'
    assert (case / 'exception.txt').read_text() == 'Traceback: boom'
    assert writer.written == 1 and writer.dropped == 0


def test_hostile_sub_id_and_symlinks_stay_inside(tmp_path: Path) -> None:
    base = tmp_path / 'cases'
    base.mkdir()
    outside = tmp_path / 'outside'
    outside.mkdir()
    os.symlink(outside, base / 'evil')  # a planted symlink with the case's name
    writer = ErrorCaseWriter(str(base))
    writer.write({'sub_id': '../outside', 'solution': 'x'}, {'success': False}, None)
    try:
        writer.write({'sub_id': 'evil', 'solution': 'x'}, {'success': False}, None)
    except OSError:
        pass  # refusing to follow the symlink is the point
    assert list(outside.iterdir()) == []
    assert all(p.parent == base for p in base.iterdir())


def test_budget_evicts_oldest(tmp_path: Path) -> None:
    writer = ErrorCaseWriter(str(tmp_path), budget_bytes=30_000)
    for i in range(10):
        writer.write({'sub_id': f'c{i}', 'solution': 'x' * 5000}, {'success': False}, None)
        os.utime(tmp_path / f'c{i}', (time.time() - 100 + i, time.time() - 100 + i))
    writer.prune()
    left = sorted(p.name for p in tmp_path.iterdir())
    assert 'c9' in left and 'c0' not in left
    assert sum(f.stat().st_size for f in tmp_path.rglob('*') if f.is_file()) <= 30_000


def test_submit_never_raises_on_unwritable_path(tmp_path: Path) -> None:
    blocker = tmp_path / 'file'
    blocker.write_text('not a dir')
    writer = ErrorCaseWriter(str(blocker / 'cases'))
    start = time.monotonic()
    for i in range(2000):  # more than the queue holds
        writer.submit({'sub_id': str(i)}, {'success': False})
    assert time.monotonic() - start < 1.0
    writer.flush()
    assert writer.written == 0
