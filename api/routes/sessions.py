"""The session routes: ``/sessions`` (create), ``/sessions/{id}`` (inspect, close),
``/sessions/{id}/cells`` (run a cell), ``/sessions/{id}/fork`` (docs/sessions.md).

Thin: validation and HTTP statuses here, everything else in `judge.transport.sessions.gateway`.  A cell
counts as one submission in flight for the back-pressure cap (429 past it).
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Request, Response

from api.deps import GatewayDep
from api.routes.submit import json_response
from judge.contracts.sessions import (
    SESSION_ID,
    CellRequest,
    CellResult,
    ForkRequest,
    ForkResult,
    SessionCreate,
    SessionInfo,
)
from judge.sessionsettings import get_session_settings
from judge.transport.sessions.gateway import SessionError, SessionGateway

logger = logging.getLogger('api.routes.sessions')
SessionId = Annotated[str, Path(pattern=SESSION_ID)]


def _sessions(request: Request, gateway: GatewayDep) -> SessionGateway:
    found: SessionGateway | None = getattr(request.app.state, 'sessions', None)
    if found is None:
        if not get_session_settings().enabled:
            raise HTTPException(404, 'sessions are turned off on this judge (JUDGE_SESSIONS=0)')
        link = gateway.router.links[0]
        found = SessionGateway(link.app, link.shard, gateway.router.path_name, gateway.settings, get_session_settings())
        request.app.state.sessions = found
    return found


async def _answer(call: Any) -> Response:
    try:
        return json_response(await call)
    except SessionError as exc:
        raise HTTPException(exc.status, str(exc)) from None


async def create_session(body: SessionCreate, request: Request, gateway: GatewayDep) -> Response:
    """A new live Python session (a warm interpreter of its own, frozen between cells)."""
    return await _answer(_sessions(request, gateway).create(body))


async def session_nodes(request: Request, gateway: GatewayDep) -> Response:
    """Each node's live sessions and the memory they hold (as the node's workers last saw them)."""
    return await _answer(_sessions(request, gateway).nodes())


async def session_info(session_id: SessionId, request: Request, gateway: GatewayDep) -> Response:
    """Where the session lives, how many cells it ran, which of them replay unfaithfully."""
    return await _answer(_sessions(request, gateway).info(session_id))


async def run_cell(session_id: SessionId, body: CellRequest, request: Request, gateway: GatewayDep) -> Response:
    """Run one cell; a result like `/run`'s, with the trailing expression's value."""
    sessions = _sessions(request, gateway)
    in_flight = request.app.state.in_flight
    await in_flight.acquire(1)
    try:
        return await _answer(sessions.cell(session_id, body))
    finally:
        in_flight.release(1)


async def fork_session(session_id: SessionId, body: ForkRequest, request: Request, gateway: GatewayDep) -> Response:
    """``n`` independent sessions starting from this one's state."""
    return await _answer(_sessions(request, gateway).fork(session_id, body))


async def close_session(session_id: SessionId, request: Request, gateway: GatewayDep) -> Response:
    """End the session and forget its cells."""
    return await _answer(_sessions(request, gateway).close(session_id))


def build_router() -> APIRouter:
    """The session routes (their path parameter checked against `SESSION_ID`, 422 otherwise)."""
    router = APIRouter()
    path = '/sessions/{session_id}'
    router.add_api_route('/sessions', create_session, methods=['POST'], response_model=SessionInfo)
    router.add_api_route('/sessions', session_nodes, methods=['GET'])
    router.add_api_route(path, session_info, methods=['GET'], response_model=SessionInfo)
    router.add_api_route(path, close_session, methods=['DELETE'])
    router.add_api_route(f'{path}/cells', run_cell, methods=['POST'], response_model=CellResult)
    router.add_api_route(f'{path}/fork', fork_session, methods=['POST'], response_model=ForkResult)
    return router
