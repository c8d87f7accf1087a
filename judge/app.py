"""The Celery application; nothing else (settings live in `celeryconfig.py`)."""

from __future__ import annotations

from celery import Celery

app = Celery('judge', include=['judge.worker.tasks'])
app.config_from_object('celeryconfig')
