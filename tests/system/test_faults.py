"""Faults of workers, Redis, gateway and clients, on private real stacks (redis-server, prefork, uvicorn).

Every test builds its own Redis + worker(s) + gateway with its own work root, so killing things never
disturbs the session stack.  Each asserts that every submission gets the right answer (or, where the
work is really gone, a clear ``internal_error`` / ``queue_timeout``) within a bound.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from judge.stack import free_port, gateway_command, wait_port, worker_command
from tests.support.helpers import request, wait_for
from tests.support.processes.services import Service, start_redis, start_worker
from tests.support.processes.stack import stack_env

pytestmark = [
    pytest.mark.integration,
    pytest.mark.both_paths,
    pytest.mark.skipif(not os.environ.get('JUDGE_TEST_FAULTS'), reason='optional: make test-faults'),
]

START_RE = re.compile(r'start sub_id=(\S+) batch=(\S+) pid=(\d+) retries=(\d+)')
END_RE = re.compile(r'\] sub_id=(\S+) batch=\S+ type=\S+ verdict=(\S+)')
SKIP_RE = re.compile(r'sub_id=(\S+) batch=\S+: skipped')
INFRA = ('internal_error', 'queue_timeout')

# A worker whose visibility timeout is short (celeryconfig's floor is 120 s): redelivery after the
# loss of a whole worker then fits in CI.  Patches the imported celeryconfig before Celery reads it.
_SHORT_VT_WORKER = """
import os, sys
import celeryconfig as c
vt = float(os.environ['TEST_VISIBILITY_TIMEOUT_S'])
c.visibility_timeout = vt
c.broker_transport_options = {**c.broker_transport_options, 'visibility_timeout': vt, 'unacked_restore_interval': 1}
from celery.__main__ import main
sys.argv = ['celery', *sys.argv[1:]]
sys.exit(main())
"""


@dataclass
class FaultStack:
    """A private stack; tests may kill and restart any part of it."""

    log_dir: Path
    env: dict[str, str]
    redis: Service
    redis_port: int
    gateway: Service
    gateway_port: int
    workers: list[Service] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f'http://127.0.0.1:{self.gateway_port}'

    def add_worker(self, name: str, *, short_vt_s: float | None = None) -> Service:
        if short_vt_s is None:
            svc = start_worker(self.env, self.log_dir, name)
        else:
            cmd = worker_command(sys.executable, 2, f'{name}@%h')
            env = self.env | {'TEST_VISIBILITY_TIMEOUT_S': str(short_vt_s)}
            svc = Service(f'worker-{name}', [sys.executable, '-c', _SHORT_VT_WORKER, *cmd[3:]], env, self.log_dir)
            svc.wait_log('ready.', 60)
        self.workers.append(svc)
        return svc

    def restart_gateway(self) -> None:
        self.gateway = Service(
            f'gateway-{self.gateway_port}-{time.monotonic_ns()}',
            gateway_command(sys.executable, self.gateway_port),
            self.env,
            self.log_dir,
        )
        wait_port(self.gateway_port, 30)

    def restart_redis(self) -> None:
        """Kill Redis (its data is lost: no persistence) and start an empty one on the same port."""
        self.redis.proc.kill()
        self.redis.proc.wait(10)
        self.redis, _ = start_redis(self.log_dir, self.redis_port)

    def worker_log(self) -> str:
        return ''.join(w.log() for w in self.workers)


def _stop_all(services: list[Service]) -> None:
    threads = [threading.Thread(target=s.stop, kwargs={'timeout_s': 10}) for s in services]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)


@contextmanager
def fault_stack(
    tmp_path: Path,
    transport: str = 'fast',
    *,
    short_vt_s: float | None = None,
    extra_env: dict[str, str] | None = None,
) -> Iterator[FaultStack]:
    redis, port = start_redis(tmp_path)
    work_root = Path('/tmp') / f'judge-fault-{port}'
    env = stack_env(f'redis://127.0.0.1:{port}/0', work_root, transport) | (extra_env or {})
    gw_port = free_port()
    gateway = Service(f'gateway-{gw_port}', gateway_command(sys.executable, gw_port), env, tmp_path)
    stack = FaultStack(tmp_path, env, redis, port, gateway, gw_port)
    try:
        stack.add_worker('w1', short_vt_s=short_vt_s)
        wait_port(gw_port, 30)
        yield stack
    finally:
        _stop_all([stack.gateway, *stack.workers])
        stack.redis.stop()
        shutil.rmtree(work_root, ignore_errors=True)


def sub(i: int, sleep_s: float = 0.0, prefix: str = 's') -> dict[str, Any]:
    """A submission printing ``i*i`` after ``sleep_s``; its sub_id identifies it in the worker log."""
    code = f'import time\ntime.sleep({sleep_s})\nprint({i} * {i})' if sleep_s else f'print({i} * {i})'
    return {'sub_id': f'{prefix}-{i}-{uuid.uuid4().hex[:8]}', 'type': 'python', 'solution': code}


def is_correct(res: dict[str, Any], i: int) -> bool:
    return bool(res['success'] and res['reason'] == '' and (res['stdout'] or '').strip() == str(i * i))


def post_async(pool: ThreadPoolExecutor, url: str, path: str, body: Any, timeout_s: float = 60) -> Future[Any]:
    return pool.submit(request, url + path, body, timeout_s=timeout_s)


def starts(log: str, prefix: str = '') -> list[tuple[str, int, int]]:
    """(sub_id, pool pid, retries) of every task start in ``log``."""
    return [(m[1], int(m[3]), int(m[4])) for m in START_RE.finditer(log) if m[1].startswith(prefix)]


def ends(log: str) -> Counter[str]:
    return Counter(m[1] for m in END_RE.finditer(log))


def test_pool_process_killed_mid_batch_is_rerun(tmp_path: Path, transport: str) -> None:
    """kill -9 of the pool process running a submission: the task is retried and answered correctly."""
    with fault_stack(tmp_path, transport) as st, ThreadPoolExecutor(2) as pool:
        subs = [sub(i, 0.05) for i in range(30)]
        victim = sub(99, 2.0, prefix='victim')
        subs.insert(5, victim)
        fut = post_async(pool, st.url, '/run/long-batch', {'submissions': subs})
        wait_for(lambda: bool(starts(st.worker_log(), 'victim')), 30, 'victim started')
        [(_, pid, retries)] = starts(st.worker_log(), 'victim')
        assert retries == 0
        os.kill(pid, signal.SIGKILL)
        t_kill = time.monotonic()
        status, body = fut.result(60)
        took = time.monotonic() - t_kill
    assert status == 200, body
    results = body['results']
    assert len(results) == len(subs)
    expected = [int(s['sub_id'].split('-')[1]) for s in subs]
    assert [is_correct(r, i) for r, i in zip(results, expected, strict=True)] == [True] * len(subs), results
    log = st.worker_log()
    victim_runs = [r for s, _, r in starts(log, 'victim')]
    assert victim_runs == [0, 1], victim_runs  # killed once, rerun once
    assert took < 30


def test_worker_main_process_killed_work_is_redelivered(tmp_path: Path, transport: str) -> None:
    """kill -9 of the worker's main process (node loss): a new worker gets every unacked task back
    after the visibility timeout and the batch completes correctly within a bound."""
    vt_s = 3.0
    with fault_stack(tmp_path, transport, short_vt_s=vt_s) as st, ThreadPoolExecutor(2) as pool:
        subs = [sub(i, 0.5 if i < 4 else 0.05) for i in range(24)]
        fut = post_async(pool, st.url, '/run/long-batch', {'submissions': subs})
        wait_for(lambda: len(starts(st.worker_log())) >= 2, 30, 'first tasks started')
        w1 = st.workers[0]
        os.kill(w1.proc.pid, signal.SIGKILL)  # the main process: nobody acks, nobody requeues
        t_kill = time.monotonic()
        os.killpg(w1.proc.pid, signal.SIGKILL)  # the whole node goes: pool processes die too
        w1.proc.wait(10)
        st.add_worker('w2', short_vt_s=vt_s)
        status, body = fut.result(60)
        took = time.monotonic() - t_kill
    assert status == 200, body
    assert [is_correct(r, i) for i, r in enumerate(body['results'])] == [True] * len(subs), body['results']
    w2_started = {s for s, _, _ in starts(st.workers[1].log())}
    w1_started = [s for s, _, _ in starts(st.workers[0].log())]
    assert set(w1_started) & w2_started, 'the tasks lost with w1 were re-run by w2'
    assert took < vt_s + 20, took


def test_warm_shutdown_finishes_running_and_hands_over_queued(tmp_path: Path, transport: str) -> None:
    """SIGTERM mid-batch: running tasks finish on the old worker, queued ones go to a second one."""
    with fault_stack(tmp_path, transport) as st, ThreadPoolExecutor(2) as pool:
        subs = [sub(i, 0.4) for i in range(16)]
        fut = post_async(pool, st.url, '/run/long-batch', {'submissions': subs})
        w1 = st.workers[0]
        wait_for(lambda: len(starts(w1.log())) >= 3, 30, 'first tasks started')
        w1.signal(signal.SIGTERM)
        t_term = time.monotonic()
        st.add_worker('w2')
        status, body = fut.result(60)
        took = time.monotonic() - t_term
        assert w1.proc.wait(20) == 0
    assert status == 200, body
    assert [is_correct(r, i) for i, r in enumerate(body['results'])] == [True] * len(subs), body['results']
    w1_log, w2_log = st.workers[0].log(), st.workers[1].log()
    w1_started = {s for s, _, _ in starts(w1_log)}
    assert w1_started and w1_started <= set(ends(w1_log)), 'every task w1 started also finished on w1'
    w2_started = {s for s, _, _ in starts(w2_log)}
    assert w2_started, 'the queued tasks were taken by w2'
    all_starts = Counter(s for s, _, _ in starts(w1_log + w2_log))
    assert set(all_starts) == {s['sub_id'] for s in subs}
    assert max(all_starts.values()) == 1, 'nothing ran twice'
    assert took < 30


def test_poison_submission_is_bounded_and_reported_as_internal_error(tmp_path: Path, transport: str) -> None:
    """A submission whose pool process dies every time: 1 run + 2 retries, then internal_error."""
    with fault_stack(tmp_path, transport) as st, ThreadPoolExecutor(2) as pool:
        poison = sub(7, 3.0, prefix='poison')
        subs = [sub(0, 0.05), poison, sub(2, 0.05)]
        t0 = time.monotonic()
        fut = post_async(pool, st.url, '/run/long-batch', {'submissions': subs})
        killed: list[int] = []
        while not fut.done() and time.monotonic() - t0 < 45:
            for _, pid, retries in starts(st.worker_log(), 'poison')[len(killed) :]:
                os.kill(pid, signal.SIGKILL)
                killed.append(retries)
            time.sleep(0.02)
        status, body = fut.result(5)
        took = time.monotonic() - t0
        time.sleep(0.5)
        log = st.worker_log()
    assert status == 200, body
    first, bad, last = body['results']
    assert is_correct(first, 0) and is_correct(last, 2)
    assert bad['reason'] == 'internal_error' and bad['verdict'] == 'internal_error', bad
    assert not bad['success'] and bad['stdout'] is None
    assert 'WorkerLostError' in bad.get('error', ''), bad
    assert killed == [0, 1, 2], killed  # bounded: max_retries=2, never looping
    assert [r for _, _, r in starts(log, 'poison')] == [0, 1, 2]
    assert took < 30, took


def test_redis_restart_mid_batch_loses_nothing_then_recovers(tmp_path: Path, transport: str) -> None:
    """Redis restarted with its data lost: what it held is published again, every answer is right, long
    before the deadline, and the same worker and gateway serve new submissions afterwards
    (tests/system/test_broker_faults.py does this under load, for each kind of broker fault)."""
    with fault_stack(tmp_path, transport) as st, ThreadPoolExecutor(2) as pool:
        subs = [sub(i, 0.3) for i in range(30)]
        fut = post_async(pool, st.url, '/run/long-batch', {'submissions': subs})
        wait_for(lambda: len(starts(st.worker_log())) >= 4, 30, 'first tasks started')
        st.restart_redis()
        t_restart = time.monotonic()
        status, body = fut.result(60)
        took = time.monotonic() - t_restart
        assert status == 200, body
        results = body['results']
        assert [is_correct(r, i) for i, r in enumerate(results)] == [True] * len(subs), results
        assert took < 15, took  # long-batch deadline is an hour: the loss was detected, not waited out

        def recovered() -> bool:
            status, body = request(st.url + '/run/batch', {'submissions': [sub(i) for i in range(4)]}, timeout_s=30)
            return status == 200 and all(is_correct(r, i) for i, r in enumerate(body['results']))

        recovery_s = wait_for(recovered, 40, 'new submissions succeed after the Redis restart')
        assert recovery_s < 40
        assert st.workers[0].proc.poll() is None and st.gateway.proc.poll() is None


def test_gateway_restart_clients_get_errors_and_recover(tmp_path: Path, transport: str) -> None:
    """The gateway killed mid-batch and restarted: the toolkit's RequestProcessor gets clear errors
    (or retries through the outage), never a wrong answer, and serves new work once it is back."""
    import asyncio

    from toolkit.batcher import RequestProcessor
    from toolkit.client import JudgeClient
    from toolkit.errors import JudgeUnavailable
    from toolkit.models import Result, Submission
    from toolkit.policy import BatchPolicy, RetryPolicy

    policy = BatchPolicy(
        max_batch_size=8,
        max_batches_in_flight=4,
        deadline_s=60,
        request_timeout_s=30,
        retry=RetryPolicy(max_attempts=6, backoff_base_s=1.0, backoff_max_s=2.0),
    )

    def code(i: int) -> str:
        return f'import time\ntime.sleep(0.1)\nprint({i} * {i})'

    with fault_stack(tmp_path, transport) as st:

        async def scenario() -> tuple[list[Any], list[Any], dict[str, Any], bool]:
            async with RequestProcessor(st.url, policy) as proc:
                tasks = [asyncio.ensure_future(proc.submit(Submission(code(i)))) for i in range(48)]
                for _ in range(300):
                    if len(starts(st.worker_log())) >= 4:
                        break
                    await asyncio.sleep(0.05)
                st.gateway.proc.kill()
                st.gateway.proc.wait(10)
                async with JudgeClient(st.url) as direct:
                    try:
                        await direct.run(Submission('print(1)'), timeout_s=5)
                        down_error = False
                    except JudgeUnavailable:
                        down_error = True
                await asyncio.to_thread(st.restart_gateway)
                during = await asyncio.gather(*tasks, return_exceptions=True)
                after = await asyncio.gather(
                    *(proc.submit(Submission(code(i))) for i in range(16)), return_exceptions=True
                )
                return during, after, proc.stats(), down_error

        t0 = time.monotonic()
        during, after, stats, down_error = asyncio.run(scenario())
        took = time.monotonic() - t0
    assert down_error, 'a call while the gateway is down raises JudgeUnavailable'
    for i, out in enumerate(during):  # a correct answer or a clear error, never a wrong answer
        assert isinstance(out, JudgeUnavailable) or (
            isinstance(out, Result) and (out.stdout or '').strip() == str(i * i)
        ), out
    assert stats['batch_errors'] >= 1 and stats['retries'] >= 1, stats
    for i, out in enumerate(after):  # recovered: the same processor works again
        assert isinstance(out, Result) and out.ok and (out.stdout or '').strip() == str(i * i), out
    assert took < 45, took


def _abandon_request(url: str, body: bytes, wait_s: float) -> None:
    """POST ``body`` then hang up after ``wait_s`` without reading the answer."""
    port = int(url.rsplit(':', 1)[1])
    with socket.create_connection(('127.0.0.1', port), timeout=10) as s:
        head = (
            f'POST /run/long-batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n'
            f'Content-Length: {len(body)}\r\n\r\n'
        )
        s.sendall(head.encode() + body)
        time.sleep(wait_s)


def test_client_disconnect_cancels_queued_tasks(tmp_path: Path, transport: str) -> None:
    """A client that hangs up mid-long-batch: the tasks not yet started are skipped, not run for nobody."""
    import json

    n = 40
    subs = [sub(i, 0.3, prefix='gone') for i in range(n)]
    with fault_stack(tmp_path, transport) as st:
        t0 = time.monotonic()
        _abandon_request(st.url, json.dumps({'submissions': subs}).encode(), 1.0)

        def all_consumed() -> bool:
            log = st.worker_log()
            return len(starts(log, 'gone')) + sum(1 for m in SKIP_RE.finditer(log) if m[1].startswith('gone')) >= n

        wait_for(all_consumed, 30, 'every task of the abandoned batch consumed')
        took = time.monotonic() - t0
        # The cluster is free again: a new request is served at once.
        status, body = request(st.url + '/run/batch', {'submissions': [sub(3)]}, timeout_s=30)
        log = st.worker_log()
    ran = len(starts(log, 'gone'))
    skipped = sum(1 for m in SKIP_RE.finditer(log) if m[1].startswith('gone'))
    assert status == 200 and is_correct(body['results'][0], 3)
    # ~1 s connected + <=1 s to notice + <=0.25 s for the workers to see it: about 2.5 s of 2 x 0.3 s tasks.
    assert ran <= 20 and skipped >= n - 20 and ran + skipped == n, (ran, skipped)
    assert took < 0.3 * n / 2, took  # faster than running them all
