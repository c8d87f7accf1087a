"""A real session host for tests that drive `SessionClient` directly (no Celery), and small helpers."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from judge.sandbox.sessionclient import HostConfig, SessionClient
from judge.settings import Settings
from tests.support.processes.slots import PYTHON

SETTINGS = Settings()


def host_config(tag: str, **overrides: Any) -> HostConfig:
    """A host of its own (node ``test-<tag>@<pid>``, work root ``/tmp/judge-test-sess-<tag>-<pid>``)."""
    extra = {
        'preload': [m for m in SETTINGS.python_preload.split(',') if m],
        'scientific': [m for m in SETTINGS.python_scientific_preload.split(',') if m],
    }
    fields: dict[str, Any] = {
        'node': f'test-{tag}@{os.getpid()}',
        'python': PYTHON,
        'work_root': f'/tmp/judge-test-sess-{tag}-{os.getpid()}',
        'memory_mb': 256,
        'pids': 64,
        'time_s': 5.0,
        'output_bytes': 1 << 20,
        'capture_bytes': 65536,
        'file_bytes': 16 << 20,
        'budget_mb': 4096,
        'session_uid_base': 100000,
        'extra': extra,
    }
    fields.update(overrides)
    return HostConfig(**fields)


@contextlib.contextmanager
def open_host(tag: str, **overrides: Any) -> Iterator[SessionClient]:
    """A session host for the test module; stopped (with its sessions) on exit."""
    client = SessionClient(host_config(tag, **overrides), worker_pid=os.getpid())
    try:
        hello, _ = client.request({'op': 'ping'})
        assert hello.get('ok'), hello
        yield client
    finally:
        client.shutdown()


def cell(client: SessionClient, sid: str, code: str, **fields: Any) -> tuple[dict[str, Any], str, str]:
    """Run one cell; (reply, stdout, stderr)."""
    stdin = fields.pop('stdin', b'')
    reply, blobs = client.request({'op': 'cell', 'sid': sid, 'code': code, **fields}, (stdin,))
    out = blobs + [b'', b'']
    return reply, out[0].decode(errors='replace'), out[1].decode(errors='replace')


def value(client: SessionClient, sid: str, code: str, **fields: Any) -> Any:
    """The value of a cell that must succeed."""
    reply, out, err = cell(client, sid, code, **fields)
    assert reply.get('ok') and reply['status'] == 0 and not reply['ended'], (reply, out, err)
    return reply['value']


def read(path: str) -> str:
    """A small file's text."""
    with open(path) as f:
        return f.read()
