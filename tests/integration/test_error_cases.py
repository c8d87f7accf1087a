"""Error-case capture end to end: a worker started with ERROR_CASE_SAVE_PATH writes the failed submissions.

The writer itself (layout, hostile ids, symlinks, budget) is tested in tests/unit/worker/test_error_cases.py.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.support.helpers import post
from tests.support.processes.services import start_gateway, start_worker
from tests.support.processes.stack import Stack

pytestmark = pytest.mark.integration


def test_worker_saves_failed_cases_end_to_end(stack: Stack, tmp_path: Path) -> None:
    """A worker started with ERROR_CASE_SAVE_PATH writes the failed submission, not the passing one."""
    cases = tmp_path / 'cases'
    env = dict(
        stack.env, ERROR_CASE_SAVE_PATH=str(cases), JUDGE_WORK_ROOT=str(Path('/tmp') / f'judge-ec-{os.getpid()}')
    )
    worker = start_worker(env, tmp_path, name='ec', concurrency=1)
    gateway, url = start_gateway(env, tmp_path)
    try:
        # The session worker also consumes the shared queues: send enough that both answer some.
        subs = [
            {'type': 'python', 'solution': 'print(1)', 'expected_output': '2', 'sub_id': f'bad-{i}'} for i in range(8)
        ]
        subs += [
            {'type': 'python', 'solution': 'print(1)', 'expected_output': '1', 'sub_id': f'ok-{i}'} for i in range(8)
        ]
        post(url, '/run/batch', {'type': 'batch', 'submissions': subs})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (cases.exists() and any(cases.iterdir())):
            time.sleep(0.1)
        saved = sorted(p.name for p in cases.iterdir())
        assert saved and all(name.startswith('bad-') for name in saved)
        result = json.loads((cases / saved[0] / 'result.json').read_text())
        assert result['verdict'] == 'wrong_answer'
    finally:
        gateway.stop()
        worker.stop()
