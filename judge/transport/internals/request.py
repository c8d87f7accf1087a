"""The fast path's worker request class: Celery's, less the ``task-started`` event and a
per-request configuration lookup.

INTERNAL (see `judge.transport.internals`): overrides ``celery.worker.request.Request.tzlocal``
and ``send_event`` and reads its private ``_app``.

Celery sends three events per task (received, started, succeeded/failed); Flower and anything else
listening process each one, and the worker's main process builds each one.  ``task-started`` only
moves a task from RECEIVED to STARTED in Flower, while the tasks running right now are on Flower's
worker page anyway (from the worker itself, not from events): dropping it saves a third of the
event traffic.  ``JUDGE_TASK_STARTED_EVENTS=1`` brings it back.
"""

from __future__ import annotations

from typing import Any

from celery.worker.request import Request as CeleryRequest

from judge.settings import get_settings

_SEND_STARTED = get_settings().task_started_events
_UNSET = object()


class Request(CeleryRequest):  # type: ignore[misc]
    """Celery's `Request` without ``task-started`` unless `Settings.task_started_events`."""

    _app_timezone: Any = _UNSET

    @property
    def tzlocal(self) -> Any:
        """The app's time zone (None: UTC), looked up once per process, not once per request."""
        tz = Request._app_timezone
        if tz is _UNSET:
            tz = Request._app_timezone = self._app.conf.timezone
        return tz

    def send_event(self, type: str, **fields: Any) -> None:
        """Send a task event, except ``task-started`` (see the module's docstring)."""
        if type != 'task-started' or _SEND_STARTED:
            super().send_event(type, **fields)
