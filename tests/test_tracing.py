"""One grep follows a submission: gateway access log, worker log and Flower-visible task arguments."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.conftest import Stack
from tests.helpers import request

pytestmark = pytest.mark.integration


def test_trace_and_sub_id_in_gateway_and_worker_logs(stack: Stack) -> None:
    trace = f'trace-{uuid.uuid4().hex[:8]}'
    sub_id = f'sub-{uuid.uuid4().hex[:8]}'
    status, body = request(
        stack.url + '/run/batch',
        {
            'type': 'batch',
            'sub_id': 'b-trace',
            'submissions': [{'type': 'python', 'solution': 'print(1)', 'sub_id': sub_id}],
        },
        headers={'X-Request-ID': trace},
    )
    assert status == 200 and body['results'][0]['success']

    # The worker logs a submission's verdict just after pushing its result: the answer can be back first.
    def worker_done() -> bool:
        return any(sub_id in line and 'verdict=' in line for line in stack.worker.log().splitlines())

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not (trace in stack.gateway.log() and worker_done()):
        time.sleep(0.05)
    gateway_lines = [line for line in stack.gateway.log().splitlines() if sub_id in line]
    worker_lines = [line for line in stack.worker.log().splitlines() if sub_id in line]
    assert gateway_lines and all(trace in line and 'b-trace' in line for line in gateway_lines)
    assert any('verdict=accepted' in line and trace in line for line in worker_lines), worker_lines
