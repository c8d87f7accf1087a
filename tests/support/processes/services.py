"""Real services: redis-server, Celery prefork workers, a uvicorn gateway (the integration and system layers)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from judge.stack import free_port, gateway_command, redis_command, wait_port, worker_command
from tests.support.paths import ROOT

SERVER_PYTHON = os.environ.get('JUDGE_SERVER_PYTHON') or sys.executable
"""Python that runs the worker and gateway (framework and client venvs point it at the server's venv)."""
RUNTIME_MODULES = os.pathsep.join(str(ROOT / p) for p in ('deploy/runtime-modules', 'tests/support/runtime_modules'))
_built: set[str] = set()


def ensure_runtime(env: dict[str, str]) -> None:
    """Build the submission runtime ``env`` describes (`make test` built the plain one; this adds the
    operator modules layer, a linked copy), once per distinct set of runtime settings."""
    key = repr(sorted((k, v) for k, v in env.items() if k.startswith('JUDGE_RUNTIME_')))
    if key in _built:
        return
    out = subprocess.run([SERVER_PYTHON, '-m', 'judge.runtime.build'], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f'the submission runtime could not be built:\n{out.stderr[-3000:]}')
    _built.add(key)


class Service:
    """A subprocess in its own session, logging to a file, stopped with its whole group."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.log_path = log_dir / f'{name}.log'
        self._log = open(self.log_path, 'ab')
        self.proc = subprocess.Popen(
            cmd, env=env, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def log(self) -> str:
        """Everything the service wrote so far."""
        return self.log_path.read_text(errors='replace')

    def wait_log(self, text: str, timeout_s: float = 30.0) -> None:
        """Wait until ``text`` appears in the log."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if text in self.log():
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f'{self.name} exited ({self.proc.returncode}):\n{self.log()[-3000:]}')
            time.sleep(0.05)
        raise TimeoutError(f'{self.name}: {text!r} not seen in {timeout_s}s:\n{self.log()[-3000:]}')

    def signal(self, sig: int) -> None:
        """Signal the main process."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def stop(self, timeout_s: float = 20.0) -> None:
        """Warm stop (SIGTERM), then kill the whole process group."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self._log.close()


def start_redis(log_dir: Path, port: int | None = None) -> tuple[Service, int]:
    """A private redis-server on a free loopback port."""
    port = port or free_port()
    svc = Service(
        f'redis-{port}',
        redis_command(port, log_dir),
        dict(os.environ),
        log_dir,
    )
    wait_port(port)
    return svc, port


def start_worker(env: dict[str, str], log_dir: Path, name: str = 'w1', concurrency: int = 2) -> Service:
    """A real `celery -A judge worker` with a prefork pool."""
    svc = Service(f'worker-{name}', worker_command(SERVER_PYTHON, concurrency, f'{name}@%h'), env, log_dir)
    svc.wait_log('ready.', 60)
    return svc


def start_gateway(env: dict[str, str], log_dir: Path) -> tuple[Service, str]:
    """A real uvicorn gateway on a free port."""
    port = free_port()
    svc = Service(f'gateway-{port}', gateway_command(SERVER_PYTHON, port), env, log_dir)
    wait_port(port, 30)
    return svc, f'http://127.0.0.1:{port}'
