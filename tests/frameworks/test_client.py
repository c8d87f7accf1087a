"""The client distribution installed alone (``make test-client``: a fresh venv with ``./client`` only).

``make test-client`` then runs the toolkit's own tests (``tests/unit/toolkit/`` and the real-gateway
``tests/integration/toolkit/test_toolkit.py``) in that venv, importing ``toolkit`` from the installed wheel.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    os.environ.get('JUDGE_CLIENT_ONLY') != '1', reason='runs in the client-only venv of `make test-client`'
)

SERVER_DISTRIBUTIONS = ('celery', 'kombu', 'redis', 'hiredis', 'fastapi', 'starlette', 'uvicorn', 'flower', 'billiard')


def installed() -> set[str]:
    """Distributions installed in this venv (the checkout's own *.egg-info, on sys.path for the
    tests' imports, does not count)."""
    paths = sorted({sysconfig.get_paths()['purelib'], sysconfig.get_paths()['platlib']})
    return {d.metadata['Name'].lower().replace('_', '-') for d in importlib.metadata.distributions(path=paths)}


def test_no_server_package_is_installed() -> None:
    names = installed()
    assert 'celery-code-judge-client' in names and 'aiohttp' in names
    assert [n for n in SERVER_DISTRIBUTIONS if n in names] == []
    assert 'celery-code-judge' not in names
    assert [m for m in SERVER_DISTRIBUTIONS if importlib.util.find_spec(m) is not None] == []


def test_toolkit_comes_from_the_client_distribution() -> None:
    import toolkit

    dist = importlib.metadata.distribution('celery-code-judge-client')
    installed = Path(str(dist.locate_file('toolkit/__init__.py'))).resolve()
    assert Path(toolkit.__file__).resolve() == installed  # not the checkout's toolkit/
    assert [r.split(';')[0] for r in dist.requires or [] if 'extra ==' not in r] == ['aiohttp>=3.9']
    shipped = sorted(p.name for p in installed.parent.glob('*/configs/*.yaml'))
    assert shipped == ['jupyter_tool_config.yaml', 'python_tool_config.yaml', 'rlinf_codejudge.yaml']
    # Every module of the checkout's toolkit is in the wheel, but the benchmarks (they read the server's processes).
    checkout = Path(__file__).resolve().parents[2] / 'toolkit'
    wanted = {str(p.relative_to(checkout)) for p in checkout.rglob('*.py')}
    wanted = {p for p in wanted if not p.startswith('bench/')}
    assert {str(p.relative_to(installed.parent)) for p in installed.parent.rglob('*.py')} == wanted
    assert importlib.util.find_spec('toolkit.bench') is None
