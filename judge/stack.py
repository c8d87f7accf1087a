"""`make run`: a private Redis (unless REDIS_URI is set), one worker, the gateway and Flower.

Runs in the foreground; Ctrl-C (or SIGTERM) stops everything it started.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN_DIR = ROOT / '.run'
logger = logging.getLogger('judge.stack')
BROKER = 'redis'
"""The name `main` gives the private Redis it starts, which `stop_all` stops last."""


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout_s: float = 20.0) -> None:
    """Wait until something listens on 127.0.0.1:``port``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(('127.0.0.1', port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f'nothing listens on port {port} after {timeout_s}s')


def redis_command(port: int, workdir: Path) -> list[str]:
    """A throwaway redis-server on loopback, without persistence."""
    return [
        'redis-server',
        '--port',
        str(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        str(workdir),
        '--loglevel',
        'warning',
    ]


def start_redis(port: int, workdir: Path) -> subprocess.Popen[bytes]:
    """Start `redis_command` and wait until it listens."""
    workdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(redis_command(port, workdir), start_new_session=True)
    wait_port(port)
    return proc


def worker_command(
    python: str, concurrency: int | None = None, name: str = 'judge@%h', loglevel: str = 'INFO'
) -> list[str]:
    """The `celery -A judge worker` command line used everywhere."""
    cmd = [
        python,
        '-m',
        'celery',
        '-A',
        'judge',
        'worker',
        '-P',
        'prefork',
        '-n',
        name,
        '-l',
        loglevel,
        '--without-gossip',
        '--without-mingle',
    ]
    if concurrency:
        cmd += ['-c', str(concurrency)]
    return cmd


def gateway_command(python: str, port: int, workers: int = 1) -> list[str]:
    """The gateway's command line (``judge-gateway``, i.e. uvicorn with the judge's defaults)."""
    return [
        python,
        '-m',
        'api',
        '--host',
        '127.0.0.1',
        '--port',
        str(port),
        '--workers',
        str(workers),
        '--log-level',
        'warning',
    ]


def main() -> int:
    """Start the stack and wait for Ctrl-C."""
    logging.basicConfig(level=logging.INFO, format='%(asctime)s %(name)s: %(message)s')
    python = sys.executable
    env = dict(os.environ)
    procs: list[tuple[str, subprocess.Popen[bytes]]] = []
    if not env.get('REDIS_URI'):
        port = int(env.get('JUDGE_REDIS_PORT', '6379'))
        try:
            wait_port(port, 0.2)
            port = free_port()  # something already listens there: do not share it by accident
        except TimeoutError:
            pass
        procs.append((BROKER, start_redis(port, RUN_DIR / 'redis')))
        env['REDIS_URI'] = f'redis://127.0.0.1:{port}/0'
    logger.info('broker: %s', env['REDIS_URI'])
    gw_port = int(env.get('JUDGE_GATEWAY_PORT', '8088'))
    flower_port = int(env.get('JUDGE_FLOWER_PORT', '5555'))
    procs.append(('worker', subprocess.Popen(worker_command(python), env=env, cwd=ROOT, start_new_session=True)))
    procs.append(
        ('gateway', subprocess.Popen(gateway_command(python, gw_port), env=env, cwd=ROOT, start_new_session=True))
    )
    procs.append(
        (
            'flower',
            subprocess.Popen(
                [
                    python,
                    '-m',
                    'celery',
                    '-A',
                    'judge',
                    'flower',
                    '--address=127.0.0.1',
                    f'--port={flower_port}',
                    '--max_tasks=10000',
                ],
                env=env,
                cwd=ROOT,
                start_new_session=True,
            ),
        )
    )
    stop = False

    def _stop(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    try:
        wait_port(gw_port, 30)
        logger.info('gateway http://127.0.0.1:%d  flower http://127.0.0.1:%d  (Ctrl-C stops)', gw_port, flower_port)
        while not stop:
            for name, proc in procs:
                if proc.poll() is not None:
                    logger.error('%s exited with %s; stopping', name, proc.returncode)
                    stop = True
            time.sleep(0.5)
    finally:
        stop_all(procs)
    return 0


def stop_all(procs: list[tuple[str, subprocess.Popen[bytes]]], timeout_s: float = 15.0) -> None:
    """Stop what `main` started, the broker last: the worker's warm shutdown lets running tasks
    finish and answer, and the gateway and worker leave their state in Redis (in-flight count, node
    record) before it goes.  Each group gets SIGTERM, then SIGKILL after ``timeout_s``."""
    services = [proc for name, proc in reversed(procs) if name != BROKER]
    brokers = [proc for name, proc in procs if name == BROKER]
    for group in (services, brokers):
        for proc in group:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in group:
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


if __name__ == '__main__':
    sys.exit(main())
