"""The FastAPI gateway: lifespan, middleware, routes; nothing else."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError

from api.backpressure import BodyLimit, InFlight
from api.deps import Gateway
from api.doors.judge0 import routes as judge0
from api.doors.judge0.models import validation_answer as judge0_errors
from api.doors.piston import routes as piston
from api.doors.piston.stages import validation_answer
from api.doors.sandboxfusion import routes as sandboxfusion
from api.errors import validation_error
from api.observe import access, metrics, scrape
from api.routes import judge_tests, sessions, upstream
from api.routes.table import submit_paths, submit_routes
from judge import procname
from judge.app import app as celery_app
from judge.procname import name_process
from judge.settings import get_settings
from judge.transport.gateway.admission import Admission
from judge.transport.gateway.lanes import Lanes
from judge.transport.gateway.paths import open_router
from judge.version import VERSION


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    name_process(procname.GATEWAY)
    settings = get_settings()
    router = open_router(celery_app, settings, metrics.OUTAGES)
    # The in-flight cap holds for every gateway process together: counted in the first shard.
    admission = Admission(router.links[0].shard, settings.max_in_flight, settings.gateway_lease_s)
    in_flight.attach(admission)
    keep_alive = asyncio.get_running_loop().create_task(admission.keep_alive())
    app.state.gateway = Gateway(
        settings=settings,
        celery=celery_app,
        router=router,
        admission=admission,
    )
    try:
        yield
    finally:
        keep_alive.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await keep_alive
        await admission.leave()
        await router.close()
        metrics.process_exit()


_settings = get_settings()
access.configure(_settings.log_level)
in_flight = InFlight(_settings.max_in_flight, _settings.max_batch_size, _settings.retry_after_s)
table = submit_routes(Lanes.from_settings(_settings))
"""The submitting routes, with this gateway's lanes (their deadlines from the settings)."""

app = FastAPI(title='code judge', version=VERSION, lifespan=lifespan)
app.state.in_flight = in_flight
app.state.door_errors = {piston.PREFIX: validation_answer, '/submissions': judge0_errors}
app.add_exception_handler(RequestValidationError, validation_error)
app.add_middleware(
    BodyLimit,
    max_body_bytes=int(_settings.max_body_mb * 1024 * 1024),
    in_flight=in_flight,
    submit_paths=submit_paths(table),
)
app.include_router(upstream.build_router(table))
app.include_router(judge_tests.build_router(table))
app.include_router(sandboxfusion.build_router(table))
app.include_router(piston.build_router(table))
app.include_router(judge0.build_router(table))
app.include_router(scrape.router)
app.include_router(sessions.build_router())
