"""A distributed code judge for RL training: Celery workers behind an upstream-compatible gateway.

`celery -A judge worker` finds the Celery app through the lazy `app` attribute below, so that
importing `judge` (for example from the sandbox's slot server) stays cheap and Celery-free.
"""

from __future__ import annotations

from judge.version import VERSION

TYPE_CHECKING = False
if TYPE_CHECKING:  # not `typing`: the sandbox's warm parents import this package (`judge.sandbox.fdio`)
    from typing import Any

__version__ = VERSION
__all__ = ['VERSION', '__version__', 'app']


def __getattr__(name: str) -> Any:
    if name == 'app':
        from judge.app import app

        return app
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
