"""``judge-gateway``: the FastAPI gateway under uvicorn, with the judge's defaults."""

from __future__ import annotations

import argparse
import os

import uvicorn


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line arguments; the environment gives the defaults (as in ``deploy/master.sh``)."""
    parser = argparse.ArgumentParser(prog='judge-gateway', description='Run the code judge gateway.')
    parser.add_argument('--host', default=os.environ.get('JUDGE_GATEWAY_HOST', '127.0.0.1'))
    parser.add_argument('--port', type=int, default=int(os.environ.get('JUDGE_GATEWAY_PORT', '8088')))
    parser.add_argument('--workers', type=int, default=int(os.environ.get('GATEWAY_WORKERS', '1')))
    parser.add_argument('--log-level', default='warning')
    return parser.parse_args(argv)


def gateway(argv: list[str] | None = None) -> None:
    """Serve ``api.main:app`` in the foreground until SIGINT/SIGTERM."""
    args = parse_args(argv)
    uvicorn.run(
        'api.main:app',
        host=args.host,
        port=args.port,
        workers=args.workers,
        access_log=False,
        log_level=args.log_level,
        timeout_graceful_shutdown=30,
    )
