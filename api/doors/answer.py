"""A door's JSON answer, in its own API's shape (not re-validated against a response model)."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Response


def json_answer(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """``data`` as JSON with ``status`` and ``headers``."""
    body = json.dumps(data, separators=(',', ':'), ensure_ascii=False)
    return Response(body, status_code=status, media_type='application/json', headers=headers)
