"""The Celery application; nothing else (settings live in `celeryconfig.py`)."""

from __future__ import annotations

from celery import Celery

app = Celery('judge', include=['judge.worker.tasks', 'judge.worker.sessions'])
app.config_from_object('celeryconfig')
