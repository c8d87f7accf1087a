"""The rules of a request's extra files (`judge.contracts.RunPayload.files`, ``fetch``), checked
where a request comes in, so that a bad one is refused before anything runs.

A path is relative to the run's work dir: ``/``-separated components, none empty, ``.`` or ``..``,
no NUL.  Content travels as base64.  The slot server checks paths again on its side
(`judge.sandbox.server.files.workdir.check_path`): it is the boundary that matters.
"""

from __future__ import annotations

import base64
import binascii

MAX_PATH_CHARS = 4096


def check_path(path: str) -> str:
    """``path`` if it names a place inside the work dir; `ValueError` saying why not."""
    if not path or len(path) > MAX_PATH_CHARS:
        raise ValueError(f'file path must have 1 to {MAX_PATH_CHARS} characters: {path[:80]!r}')
    if path.startswith('/'):
        raise ValueError(f'file path must be relative to the working directory: {path!r}')
    if '\0' in path or any(part in ('', '.', '..') for part in path.split('/')):
        raise ValueError(f'file path must not have empty, "." or ".." parts: {path!r}')
    return path


def check_base64(path: str, content: str) -> str:
    """``content`` without whitespace (line breaks are allowed) if it is valid base64; else `ValueError`."""
    compact = ''.join(content.split())
    try:
        base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f'content of file {path!r} is not valid base64') from None
    return compact


def encode(data: bytes) -> str:
    """``data`` as the payload carries it."""
    return base64.b64encode(data).decode('ascii')


def decode(content: str) -> bytes:
    """The bytes of a payload's (or a result's) file."""
    return base64.b64decode(content)
