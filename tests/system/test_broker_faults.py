"""Broker faults lose nothing: a Redis restart, a Sentinel failover or a partition costs time, never answers.

Each test runs a private real stack (redis-server, or a primary, a replica and three Sentinels; a
prefork worker with two pool processes; the uvicorn gateway) on the fast or the stock path, sends a
long batch of `BATCH_N` small submissions with single `/run` calls in flight beside it
(`tests.system.brokerload`), and once the worker has started `FAULT_AFTER` of the batch:

* **restart**: Redis is killed with SIGKILL and an empty one starts on the same port a second later;
* **failover**: the replica stops receiving the primary's writes (`tests.system.sentinels`), the
  primary takes writes for another second and is killed with SIGKILL; the Sentinels promote the
  replica, which lacks that tail;
* **partition**: Redis is paused (SIGSTOP) for `PAUSE_S`, longer than every client timeout
  (``JUDGE_REDIS_TIMEOUT_S``, 5 s), then resumed.

Every answer must be right, once, in its place: no ``internal_error``, no ``queue_timeout``.  The
worker must ride the fault out with the same pool processes and slot servers (warm slots), and
`/status` and `/metrics` must show the outage and the recovery.  The measured times (fault to broker
back, broker back to the first `/run` answered, the batch's wall time) are printed (``pytest -s``).

A last test kills Redis for good: requests answer ``internal_error`` saying the broker was
unreachable once the outage window (``JUDGE_BROKER_OUTAGE_S``, 4 s there) has passed, and the stack
serves again when Redis is back.

`make test` runs the last test only (tests/test_faults.py restarts Redis under a small batch there);
the rest (about four minutes) runs with ``JUDGE_TEST_BROKER_FAULTS=1``: ``make test-broker-faults``.
The restart on the fast path runs with two gateway processes and Flower watching (after it, Flower must show
the worker online and a task sent once both are back).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from judge.stack import free_port, gateway_command, wait_port
from tests.support.helpers import gateway_status, request, wait_for
from tests.support.metrics import scrape, value
from tests.support.processes.broker_load import Load, Report
from tests.support.processes.sentinels import MASTER, Sentinels
from tests.support.processes.services import SERVER_PYTHON, Service, start_redis, start_worker
from tests.support.processes.stack import stack_env

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
HEAVY = pytest.mark.skipif(not os.environ.get('JUDGE_TEST_BROKER_FAULTS'), reason='optional: make test-broker-faults')

BATCH_N = 500
FAULT_AFTER = 60
"""Batch submissions the worker has started when the fault comes."""
PAUSE_S = 8.0
START_RE = re.compile(r'start sub_id=(\S+) batch=\S+ pid=(\d+)')


@dataclass
class Measured:
    """One scenario's figures."""

    fault: str
    transport: str
    down_s: float
    """From the fault to the broker being back (restarted, promoted, resumed)."""
    recover_s: float
    """From the broker being back to the first `/run` answered (right) after it."""
    report: Report
    republished: float
    judged_twice: int

    def line(self) -> str:
        return (
            f'{self.fault}/{self.transport}: broker away {self.down_s:.1f} s, first /run answered '
            f'{self.recover_s:.2f} s after it was back, batch of {BATCH_N} in {self.report.batch_s:.1f} s, '
            f'{self.republished:.0f} republished, {self.judged_twice} judged twice, '
            f'{len(self.report.runs)} /run calls'
        )


def _children(pid: int) -> set[int]:
    try:
        text = Path(f'/proc/{pid}/task/{pid}/children').read_text()
    except OSError:
        return set()
    return {int(p) for p in text.split()}


def _pools_and_slots(worker: Service) -> dict[int, set[int]]:
    """The worker's pool processes and, for each, its slot server (its children)."""
    return {pool: _children(pool) for pool in _children(worker.proc.pid)}


def _started(worker: Service, prefix: str) -> Counter[str]:
    return Counter(m[1] for m in START_RE.finditer(worker.log()) if m[1].startswith(prefix))


def run_scenario(tmp_path: Path, transport: str, fault: str, gateways: int = 1, flower: bool = False) -> Measured:
    """Build the stack, run the load, inject ``fault``, check every answer; return the figures."""
    cluster = Sentinels(tmp_path) if fault == 'failover' else None
    redis_svc: Service | None = None
    if cluster is not None:
        url, port = cluster.url, cluster.primary_port
    else:
        redis_svc, port = start_redis(tmp_path)
        url = f'redis://127.0.0.1:{port}/0'
    work_root = Path('/tmp') / f'judge-brokerfault-{port}'
    env = stack_env(url, work_root, transport) | {'JUDGE_REDIS_SENTINEL_MASTER': MASTER}
    services: list[Service] = []
    try:
        worker = start_worker(env, tmp_path, f'bf{port}')
        services.append(worker)
        gw_port = free_port()
        gateway = Service(f'gateway-{gw_port}', gateway_command(SERVER_PYTHON, gw_port, gateways), env, tmp_path)
        services.append(gateway)
        wait_port(gw_port, 30)
        base = f'http://127.0.0.1:{gw_port}'
        flower_url = ''
        if flower:
            flower_port = free_port()
            cmd = [
                SERVER_PYTHON,
                '-m',
                'celery',
                '-A',
                'judge',
                'flower',
                '--address=127.0.0.1',
                f'--port={flower_port}',
            ]
            services.append(
                Service(f'flower-{flower_port}', cmd, env | {'FLOWER_UNAUTHENTICATED_API': 'true'}, tmp_path)
            )
            wait_port(flower_port, 30)
            flower_url = f'http://127.0.0.1:{flower_port}'
        status, warm = request(base + '/run', {'type': 'python', 'solution': 'print(1)'}, timeout_s=60)
        assert status == 200 and warm['stdout'] == '1\n', warm
        slots_before = _pools_and_slots(worker)
        assert len(slots_before) == 2 and all(slots_before.values()), slots_before

        load = Load(base, BATCH_N).start()
        wait_for(lambda: sum(_started(worker, 'batch-').values()) >= FAULT_AFTER, 60, 'the batch under way')
        assert not load.batch_done(), 'the batch finished before the fault: make it longer'
        t_fault = time.monotonic()
        if fault == 'restart':
            assert redis_svc is not None
            redis_svc.proc.kill()
            redis_svc.proc.wait(10)
            time.sleep(1.0)
            redis_svc, _ = start_redis(tmp_path, port)
            t_back = time.monotonic()
        elif fault == 'failover':
            assert cluster is not None
            cluster.cut_tail()
            time.sleep(1.0)
            behind = cluster.replica_offset_behind()
            cluster.kill_primary()
            cluster.wait_promoted()
            t_back = time.monotonic()
            assert behind > 0, 'the replica was meant to miss the tail'
        else:
            assert redis_svc is not None
            os.kill(redis_svc.proc.pid, signal.SIGSTOP)
            time.sleep(PAUSE_S)
            os.kill(redis_svc.proc.pid, signal.SIGCONT)
            t_back = time.monotonic()
        report = load.report()
        in_flight = report.in_flight_at(t_back - 0.1)

        assert not report.problems, f'{len(report.problems)} wrong: {report.problems[:10]}'
        assert report.batch_reasons == {'accepted': BATCH_N}, report.batch_reasons
        assert in_flight >= 1, 'a /run was in flight during the fault'
        assert worker.proc.poll() is None and gateway.proc.poll() is None
        assert _pools_and_slots(worker) == slots_before, 'the worker kept its pool processes and warm slots'
        # A paused Redis may leave the consumer's connection open (its BRPOP just waits): no reconnection then.
        reconnected = fault != 'partition'
        assert not reconnected or 'reconnected to the broker after' in worker.log()

        seen = gateway_status(base)
        assert seen['broker'] == 'ok', seen
        samples = scrape(base)
        republished = value(samples, 'judge_republished_submissions_total', shard='s0')
        # Redis lost the data (restart, failover): the unanswered must have been published again. A paused
        # Redis kept it: the results that arrive after the pause may all be taken without republishing.
        lost_data = fault != 'partition'
        assert republished >= 1 or not lost_data, 'the unanswered submissions were published again'
        assert value(samples, 'judge_broker_reconnects_total', shard='s0') >= 1
        if reconnected:
            node = next(n['name'] for n in seen['nodes'])
            assert value(samples, 'judge_worker_broker_reconnects_total', shard='s0', node=node) >= 1
            assert seen['nodes'][0]['broker_reconnects']['count'] >= 1, seen['nodes']
        if gateways == 1:  # with several processes, the one answering may not be the one that saw it
            assert seen['broker_outage']['outages'] >= 1, seen
            assert seen['broker_outage']['republished'] >= 1 or not lost_data, seen
        if flower_url:
            _assert_flower_follows_after_the_restart(flower_url, base)
        twice = sum(1 for n in _started(worker, 'batch-').values() if n > 1)
        measured = Measured(
            fault, transport, t_back - t_fault, report.first_answer_after(t_back), report, republished, twice
        )
        print('\n' + measured.line())
        return measured
    finally:
        for svc in reversed(services):
            svc.stop()
        if cluster is not None:
            cluster.stop()
        if redis_svc is not None:
            if redis_svc.proc.poll() is None:
                os.kill(redis_svc.proc.pid, signal.SIGCONT)
            redis_svc.stop()
        shutil.rmtree(work_root, ignore_errors=True)


def _assert_flower_follows_after_the_restart(url: str, base: str) -> None:
    """Flower, which lost its event stream with Redis, lists the worker online and a task run after it.

    Whether Flower sees the republished attempts themselves depends on how soon its event receiver
    reconnects (it retries every second or two) against how soon they run: a task sent once both are
    back is what it must see.
    """
    marker = f'flower-after-restart-{time.monotonic_ns()}'
    sub = {'sub_id': marker, 'type': 'python', 'solution': 'print(7 * 6)'}
    status, answer = request(base + '/run', sub, timeout_s=60)
    assert status == 200 and answer['stdout'] == '42\n', answer

    def seen() -> bool:
        status, tasks = request(url + '/api/tasks?limit=5000', timeout_s=10)
        if status != 200 or not isinstance(tasks, dict):
            return False
        after = [t for t in tasks.values() if marker in str(t.get('args') or '') and t.get('state') == 'SUCCESS']
        status, workers = request(url + '/workers?json=1', timeout_s=10)
        online = status == 200 and any(w.get('status') for w in workers.get('data', []))
        return bool(after) and online

    wait_for(seen, 30, 'Flower shows the worker back online and a task run after the restart')


def _check(m: Measured, bound_s: float) -> None:
    assert m.recover_s < bound_s, m.line()


@HEAVY
def test_redis_restarted_empty_mid_batch_loses_nothing(tmp_path: Path) -> None:
    """The fast path, two gateway processes, Flower watching."""
    _check(run_scenario(tmp_path, 'fast', 'restart', gateways=2, flower=True), 15)


@HEAVY
def test_redis_restarted_empty_mid_batch_loses_nothing_on_the_stock_path(tmp_path: Path) -> None:
    _check(run_scenario(tmp_path, 'stock', 'restart'), 15)


@HEAVY
@pytest.mark.parametrize('path', ['fast', 'stock'])
def test_sentinel_failover_to_a_replica_missing_the_tail_loses_nothing(tmp_path: Path, path: str) -> None:
    _check(run_scenario(tmp_path, path, 'failover'), 20)


@HEAVY
@pytest.mark.parametrize('path', ['fast', 'stock'])
def test_redis_paused_past_the_client_timeouts_loses_nothing(tmp_path: Path, path: str) -> None:
    _check(run_scenario(tmp_path, path, 'partition'), 15)


def test_a_broker_gone_for_longer_than_the_window_is_reported_as_unreachable(tmp_path: Path) -> None:
    """Redis killed and not restarted: requests wait out ``JUDGE_BROKER_OUTAGE_S`` (4 s here), then
    answer ``internal_error`` saying the broker was unreachable (never a wrong answer, never the hour
    of the long-batch deadline); a request arriving during the outage waits too; once Redis is back
    the same stack serves again."""
    redis_svc, port = start_redis(tmp_path)
    work_root = Path('/tmp') / f'judge-brokergone-{port}'
    env = stack_env(f'redis://127.0.0.1:{port}/0', work_root, 'fast') | {'JUDGE_BROKER_OUTAGE_S': '4'}
    services: list[Service] = []
    try:
        services.append(start_worker(env, tmp_path, f'gone{port}'))
        gw_port = free_port()
        services.append(Service(f'gateway-{gw_port}', gateway_command(SERVER_PYTHON, gw_port), env, tmp_path))
        wait_port(gw_port, 30)
        base = f'http://127.0.0.1:{gw_port}'
        slow = [{'type': 'python', 'solution': f'import time\ntime.sleep(1)\nprint({i})'} for i in range(8)]
        with ThreadPoolExecutor(2) as pool:
            batch = pool.submit(request, base + '/run/long-batch', {'submissions': slow}, timeout_s=60)
            wait_for(lambda: 'start sub_id=' in services[0].log(), 30, 'the batch under way')
            redis_svc.proc.kill()
            redis_svc.proc.wait(10)
            t_kill = time.monotonic()
            late = pool.submit(request, base + '/run', {'type': 'python', 'solution': 'print(1)'}, timeout_s=60)
            (status, body), (late_status, late_body) = batch.result(60), late.result(60)
            took = time.monotonic() - t_kill
        assert status == 200 and late_status == 200, (body, late_body)
        answers = [*body['results'], late_body]
        for r in answers:
            if r['reason'] == 'internal_error':
                assert not r['success'] and r['stdout'] is None and 'unreachable' in r['error'], r
            else:  # finished before the kill
                assert r['success'], r
        assert late_body['reason'] == 'internal_error'
        assert 3.5 < took < 15, took
        status_body = gateway_status(base)
        assert (
            status_body['broker'].startswith('unreachable') and status_body['broker_outage']['state'] == 'unreachable'
        )
        redis_svc, _ = start_redis(tmp_path, port)
        wait_for(
            lambda: (
                request(base + '/run', {'type': 'python', 'solution': 'print(2)'}, timeout_s=30)[1].get('stdout')
                == '2\n'
            ),
            30,
            'served again once Redis is back',
        )
    finally:
        for svc in reversed(services):
            svc.stop()
        redis_svc.stop()
        shutil.rmtree(work_root, ignore_errors=True)
