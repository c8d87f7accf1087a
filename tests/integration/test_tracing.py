"""One grep follows a submission: gateway access log, worker log and Flower-visible task arguments."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.support.helpers import request
from tests.support.processes.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.both_paths]


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


def test_judge_tests_gets_the_same_metrics_log_and_trace_as_run(stack: Stack) -> None:
    """`/judge/tests` goes through the one submit path: access log with trace id, metrics, worker lines."""
    from tests.support.metrics import scrape, value

    trace = f'trace-{uuid.uuid4().hex[:8]}'
    job_id = f'job-{uuid.uuid4().hex[:8]}'
    before = scrape(stack.url)
    body = {
        'sub_id': job_id,
        'type': 'python',
        'solution': 'print(input())',
        'tests': [{'input': '1', 'expected_output': '1'}, {'input': '2', 'expected_output': '3'}],
    }
    status, answer = request(stack.url + '/judge/tests', body, headers={'X-Request-ID': trace})
    assert status == 200 and (answer['passed'], answer['total']) == (1, 2), answer
    after = scrape(stack.url)
    for verdict in ('accepted', 'wrong_answer'):
        labels = {'language': 'python', 'route': '/judge/tests', 'verdict': verdict}
        assert (
            value(after, 'judge_submissions_total', **labels) - value(before, 'judge_submissions_total', **labels) == 1
        )
    sizes = {'route': '/judge/tests'}
    assert value(after, 'judge_batch_size_count', **sizes) - value(before, 'judge_batch_size_count', **sizes) == 1

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not any(job_id in line for line in stack.gateway.log().splitlines()):
        time.sleep(0.05)
    lines = [line for line in stack.gateway.log().splitlines() if job_id in line]
    assert len(lines) == 1 and '/judge/tests' in lines[0] and trace in lines[0] and f'{job_id}:1' in lines[0], lines
    worker = [line for line in stack.worker.log().splitlines() if f'{job_id}:0' in line and 'verdict=' in line]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not worker:
        time.sleep(0.05)
        worker = [line for line in stack.worker.log().splitlines() if f'{job_id}:0' in line and 'verdict=' in line]
    assert worker and trace in worker[0], worker
