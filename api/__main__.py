"""``python -m api``: the gateway (`api.cli`), as ``judge-gateway``."""

from api.cli import gateway

gateway()
