"""The judge's exceptions (the sandbox keeps its own tree under `judge.sandbox.errors.SandboxError`)::

    JudgeError
    ├── ConfigError            a setting that cannot work (bad URL, unknown transport path)
    ├── UnsupportedLanguage    a submission's language has no executor (also a ValueError)
    └── TransportError         moving a submission or its result failed
        ├── RedisDataLost      Redis no longer holds a waiting request's keys (restarted or flushed)
        ├── BrokerUnreachable  Redis did not answer in time (down, paused, failing over)
        └── InternalsChanged   an installed Celery/kombu/redis-py lacks an internal the fast path uses

Nothing here is ever reported as a wrong answer: a `TransportError` becomes ``internal_error``.
"""

from __future__ import annotations


class JudgeError(Exception):
    """Root of the judge's own exceptions."""


class ConfigError(JudgeError):
    """A setting that cannot work; the message names the setting."""


class UnsupportedLanguage(JudgeError, ValueError):
    """No executor for the submission's language."""


class TransportError(JudgeError):
    """Publishing a submission or delivering its result failed."""


class RedisDataLost(TransportError):
    """Redis no longer holds a waiting request's keys: it restarted (or was flushed)."""


class BrokerUnreachable(TransportError):
    """Redis did not answer in time: down, restarting, paused, or failing over."""


class InternalsChanged(TransportError):
    """The fast path's internals are missing or changed; run the locked versions or ``JUDGE_TRANSPORT=stock``."""
