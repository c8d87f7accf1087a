"""Prometheus `/metrics` of the real gateway: names, values after real submissions, multiprocess mode."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.stack import free_port, gateway_command, wait_port
from judge.transport.keys import KeySpace
from tests.support.helpers import post
from tests.support.metrics import scrape, total, value
from tests.support.processes.services import Service
from tests.support.processes.stack import Stack

pytestmark = pytest.mark.integration


def _py(solution: str, expected: str) -> dict[str, str]:
    return {'type': 'python', 'solution': solution, 'expected_output': expected}


def test_metrics_move_after_real_submissions(gateway_url: str) -> None:
    before = scrape(gateway_url)
    assert value(before, 'judge_broker_up') == 1.0
    assert value(before, 'judge_in_flight_submissions') == 0.0
    lists = KeySpace().queue_lists()  # one list per queue (priority step 0): 3 lists, read per scrape
    assert {q for q, _, _ in lists} == {'judge.run', 'judge.batch', 'judge.long'}
    for queue, step, _ in lists:
        assert ('judge_queue_depth', frozenset({('queue', queue), ('priority', str(step))})) in before
    assert sum(1 for name, _ in before if name == 'judge_queue_depth') == len(lists)

    subs = [_py('print(1)', '1'), _py('print(2)', '2'), _py('print(3)', 'not three')]
    body = post(gateway_url, '/run/batch', {'type': 'batch', 'submissions': subs})
    assert [r['verdict'] for r in body['results']] == ['accepted', 'accepted', 'wrong_answer']
    assert post(gateway_url, '/judge', _py('print(4)', '4'))['verdict'] == 'accepted'

    after = scrape(gateway_url)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    sub = 'judge_submissions_total'
    assert delta(sub, language='python', route='/run/batch', verdict='accepted') == 2
    assert delta(sub, language='python', route='/run/batch', verdict='wrong_answer') == 1
    assert delta(sub, language='python', route='/judge', verdict='accepted') == 1
    # Wrong answers are not infrastructure failures.
    assert total(after, 'judge_infra_failures_total') == total(before, 'judge_infra_failures_total')
    assert delta('judge_batch_size_count', route='/run/batch') == 1
    assert delta('judge_batch_size_sum', route='/run/batch') == 3
    assert delta('judge_execution_seconds_count', language='python') == 4
    assert 0 < delta('judge_execution_seconds_sum', language='python') < 4 * 4
    assert delta('judge_queue_wait_seconds_count', route='/run/batch') == 3
    assert delta('judge_queue_wait_seconds_count', route='/judge') == 1
    assert delta('judge_queue_wait_seconds_sum', route='/run/batch') >= 0
    assert value(after, 'judge_in_flight_submissions') == 0.0
    assert value(after, 'judge_queue_depth', queue='judge.batch', priority='4') == 0.0


@pytest.fixture(scope='module')
def multiproc_gateway(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A gateway with two uvicorn worker processes sharing PROMETHEUS_MULTIPROC_DIR."""
    mp_dir: Path = tmp_path_factory.mktemp('prom')
    port = free_port()
    env = {**stack.env, 'PROMETHEUS_MULTIPROC_DIR': str(mp_dir)}
    svc = Service(f'gateway-mp-{port}', gateway_command(sys.executable, port, workers=2), env, stack.log_dir)
    try:
        wait_port(port, 30)
        yield f'http://127.0.0.1:{port}'
    finally:
        svc.stop()


def test_multiprocess_mode_aggregates_every_process(multiproc_gateway: str) -> None:
    n = 6
    for i in range(n):  # a new connection each time: the kernel spreads them over both processes
        assert post(multiproc_gateway, '/run', _py(f'print({i})', str(i)))['verdict'] == 'accepted'
    for _ in range(3):  # whichever process answers the scrape reports the sum of both
        samples = scrape(multiproc_gateway)
        assert total(samples, 'judge_submissions_total', route='/run') == n
        assert value(samples, 'judge_execution_seconds_count', language='python') == n
        assert value(samples, 'judge_in_flight_submissions') == 0.0
        assert value(samples, 'judge_broker_up') == 1.0
