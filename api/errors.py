"""Error responses that never fail themselves.

The gateway has no exception tree of its own: a request it refuses gets an HTTP error before
anything is enqueued (413/429 from `api.backpressure`, 422 here), and a submission the
infrastructure could not judge is a result (`internal_error`, `queue_timeout`; the causes are
`judge.errors`), never an exception to the client.
"""

from __future__ import annotations

import json

from fastapi import Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError


async def validation_error(request: Request, exc: Exception) -> Response:
    """422 like FastAPI's own, but ASCII-escaped: the offending input may hold lone surrogates."""
    assert isinstance(exc, RequestValidationError)
    body = json.dumps({'detail': jsonable_encoder(exc.errors())}, ensure_ascii=True, default=str)
    return Response(body, status_code=422, media_type='application/json')
