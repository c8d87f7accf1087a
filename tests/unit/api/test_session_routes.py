"""The session routes' operations and models (api/routes/sessions.py, judge/contracts/sessions.py), read from the
gateway's OpenAPI schema: additive to upstream's routes."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from judge.contracts.sessions import MIN_SESSION_MEMORY_MB, CellRequest, ForkRequest, SessionCreate


def test_the_session_operations() -> None:
    from api.main import app

    paths = app.openapi()['paths']
    got = {(path, method) for path, methods in paths.items() if path.startswith('/sessions') for method in methods}
    assert got == {
        ('/sessions', 'post'),
        ('/sessions', 'get'),
        ('/sessions/{session_id}', 'get'),
        ('/sessions/{session_id}', 'delete'),
        ('/sessions/{session_id}/cells', 'post'),
        ('/sessions/{session_id}/fork', 'post'),
    }
    cell = paths['/sessions/{session_id}/cells']['post']
    assert cell['responses']['200']['content']['application/json']['schema']['$ref'].endswith('/CellResult')


def test_the_session_models_check_their_fields() -> None:
    assert SessionCreate().kind == 'scientific'
    assert CellRequest(code='x').busy == 'wait' and CellRequest(code='x').value is True
    assert SessionCreate(memory_mb=MIN_SESSION_MEMORY_MB).memory_mb == MIN_SESSION_MEMORY_MB
    too_small = {'memory_mb': MIN_SESSION_MEMORY_MB - 1}  # the process might not start: 422, not the judge's 503
    for bad in ({'session_id': 'no spaces'}, {'kind': 'huge'}, {'ttl_s': 0}, {'seed': -1}, {'extra': 1}, too_small):
        with pytest.raises(ValidationError):
            SessionCreate(**bad)
    with pytest.raises(ValidationError):
        CellRequest(code='x', busy='never')
    with pytest.raises(ValidationError):
        ForkRequest(n=65)
    with pytest.raises(ValidationError):
        CellRequest(code='\ud800')  # a lone surrogate: 422, as for submissions
