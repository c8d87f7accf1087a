"""Error responses that never fail themselves.

The gateway has no exception tree of its own: a request it refuses gets an HTTP error before
anything is enqueued (413/429 from `api.backpressure`, 422 here), and a submission the
infrastructure could not judge is a result (`internal_error`, `queue_timeout`; the causes are
`judge.errors`), never an exception to the client.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError

DoorErrors = Callable[[Sequence[Any]], Response]
"""How a compatible door answers a request that fails validation (its own API's error)."""


async def validation_error(request: Request, exc: Exception) -> Response:
    """422 like FastAPI's own, but ASCII-escaped: the offending input may hold lone surrogates; under
    a door's path prefix (``app.state.door_errors``), that door's own error."""
    assert isinstance(exc, RequestValidationError)
    doors: dict[str, DoorErrors] = getattr(request.app.state, 'door_errors', {})
    for prefix, answer in doors.items():
        if request.scope['path'].startswith(prefix):
            return answer(exc.errors())
    body = json.dumps({'detail': jsonable_encoder(exc.errors())}, ensure_ascii=True, default=str)
    return Response(body, status_code=422, media_type='application/json')
