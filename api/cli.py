"""``judge-gateway`` (also ``python -m api``): the FastAPI gateway under uvicorn, with the judge's defaults.

With ``--workers N`` above 1, the N processes share one port (uvicorn) and their Prometheus metrics
(``PROMETHEUS_MULTIPROC_DIR``: the one given, emptied first, or a private temporary directory
removed at exit), so `/metrics` answers the same whichever process takes the scrape; `/status` and
the in-flight cap are shared through Redis (`judge.transport.gateway.admission`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

import uvicorn

from judge import procname
from judge.procname import name_process
from judge.settings import get_settings

MULTIPROC_ENV = 'PROMETHEUS_MULTIPROC_DIR'


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line arguments; the environment gives the defaults (as in ``deploy/master.sh``)."""
    parser = argparse.ArgumentParser(prog='judge-gateway', description='Run the code judge gateway.')
    parser.add_argument('--host', default=os.environ.get('JUDGE_GATEWAY_HOST', '127.0.0.1'))
    parser.add_argument('--port', type=int, default=int(os.environ.get('JUDGE_GATEWAY_PORT', '8088')))
    parser.add_argument('--workers', type=int, default=int(os.environ.get('GATEWAY_WORKERS', '1')))
    parser.add_argument('--log-level', default='warning')
    return parser.parse_args(argv)


def metrics_dir(workers: int) -> str | None:
    """Prepare ``PROMETHEUS_MULTIPROC_DIR`` for ``workers`` processes; returns a directory made here
    (to remove at exit), or None.  One process needs none unless one is set (then it is emptied too)."""
    given = os.environ.get(MULTIPROC_ENV)
    if given:
        path = Path(given)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob('*.db'):  # a previous run's values would be added to this one's
            stale.unlink()
        return None
    if workers <= 1:
        return None
    made = tempfile.mkdtemp(prefix='judge-metrics-')
    os.environ[MULTIPROC_ENV] = made  # the worker processes inherit it
    return made


def gateway(argv: list[str] | None = None) -> None:
    """Serve ``api.main:app`` in the foreground until SIGINT/SIGTERM."""
    args = parse_args(argv)
    name_process(procname.GATEWAY)
    made = metrics_dir(args.workers)
    try:
        uvicorn.run(
            'api.main:app',
            host=args.host,
            port=args.port,
            workers=args.workers,
            access_log=False,
            log_level=args.log_level,
            timeout_keep_alive=get_settings().gateway_keep_alive_s,
            timeout_graceful_shutdown=30,
        )
    finally:
        if made:
            shutil.rmtree(made, ignore_errors=True)
