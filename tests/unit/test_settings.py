"""Settings (`judge.settings`): upstream's defaults and their environment variables."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from judge.settings import Settings


def test_settings_defaults_match_upstream(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        'MAX_EXECUTION_TIME',
        'MAX_MEMORY',
        'MAX_WORKERS',
        'MAX_STDOUT_ERROR_LENGTH',
        'REDIS_URI',
        'MAX_QUEUE_WORK_LIFE_TIME',
        'LONG_BATCH_MAX_QUEUE_WAIT_TIME',
    ):
        monkeypatch.delenv(name, raising=False)
    s = Settings()
    assert (s.max_execution_time, s.max_memory, s.max_stdout_error_length) == (10, 256, 1000)
    assert s.max_workers >= 1 and s.max_queue_wait_time == 19 and s.long_batch_wait_s == 3615
    monkeypatch.setenv('MAX_EXECUTION_TIME', '4')
    monkeypatch.setenv('MAX_WORKERS', '0')
    s = Settings()
    assert s.max_queue_wait_time == 13 and s.max_workers >= 1
    monkeypatch.setenv('MAX_MEMORY', '-1')
    with pytest.raises(ValidationError):
        Settings()
