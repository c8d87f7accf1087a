"""The worker's task request (`judge.transport.internals.request.Request`): task events and the time zone."""

from __future__ import annotations

import pytest


def test_worker_requests_send_every_task_event_but_started(monkeypatch: pytest.MonkeyPatch) -> None:
    import judge.transport.internals.request
    from judge.worker.tasks import run

    sent: list[str] = []

    class Eventer:
        enabled = True

        def send(self, type: str, **fields: object) -> None:
            sent.append(type)

    request = object.__new__(judge.transport.internals.request.Request)
    request._eventer, request._task, request.id = Eventer(), run, 'task-id'
    for event in ('task-received', 'task-started', 'task-succeeded', 'task-failed'):
        request.send_event(event)
    assert sent == ['task-received', 'task-succeeded', 'task-failed']
    assert run.Request == 'judge.transport.internals.request:Request'  # the worker builds our class for this task
    monkeypatch.setattr(judge.transport.internals.request, '_SEND_STARTED', True)
    request.send_event('task-started')
    assert sent[-1] == 'task-started'


def test_worker_requests_look_the_time_zone_up_once() -> None:
    import judge.transport.internals.request
    from judge.app import app

    request = object.__new__(judge.transport.internals.request.Request)
    request._app = app
    assert request.tzlocal == app.conf.timezone  # None (UTC) unless configured
    assert (
        judge.transport.internals.request.Request._app_timezone is not judge.transport.internals.request._UNSET
    )  # cached, even when None
