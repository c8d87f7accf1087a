"""Framing between a worker slot and its slot server: a JSON header frame, then raw byte frames.

Every frame is a 4-byte big-endian length followed by that many bytes.  A message is one JSON
frame whose ``blobs`` key lists how many raw frames follow; bulk bytes (program output) never go
through JSON, so non-UTF-8 output survives unchanged.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from judge.sandbox.errors import ProtocolError
from judge.sandbox.fdio import read_exact, write_all

_LEN = struct.Struct('>I')
MAX_FRAME_BYTES = 256 * 1024 * 1024


def read_frame(fd: int) -> bytes:
    """Read one length-prefixed frame."""
    (size,) = _LEN.unpack(read_exact(fd, _LEN.size))
    if size > MAX_FRAME_BYTES:
        raise ProtocolError(f'frame of {size} bytes is too large')
    return read_exact(fd, size)


def send_message(fd: int, header: dict[str, Any], blobs: tuple[bytes, ...] = ()) -> None:
    """Send a JSON header and its raw blobs in one write where possible."""
    header = dict(header, blobs=len(blobs))
    body = json.dumps(header, separators=(',', ':')).encode()
    parts = [_LEN.pack(len(body)), body]
    for blob in blobs:
        parts.append(_LEN.pack(len(blob)))
        parts.append(blob)
    write_all(fd, b''.join(parts))


def recv_message(fd: int) -> tuple[dict[str, Any], list[bytes]]:
    """Receive a header and the blobs it announces."""
    try:
        header = json.loads(read_frame(fd))
    except ValueError as e:
        raise ProtocolError(f'bad header: {e}') from e
    if not isinstance(header, dict):
        raise ProtocolError('header is not an object')
    count = int(header.get('blobs', 0))
    return header, [read_frame(fd) for _ in range(count)]
