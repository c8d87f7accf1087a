"""The FastAPI gateway: lifespan, middleware, routes; nothing else."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError

from api import access, metrics
from api.backpressure import BodyLimit, InFlight
from api.deps import Gateway
from api.dispatch import Dispatcher, routes_for
from api.errors import validation_error
from api.judge_tests import router as judge_tests_router
from api.routes import router
from judge.app import app as celery_app
from judge.redisconn import async_client
from judge.settings import get_settings
from judge.version import VERSION


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings = get_settings()
    client = async_client(settings)
    app.state.gateway = Gateway(
        settings=settings,
        celery=celery_app,
        redis=client,
        dispatcher=Dispatcher(celery_app, client),
        routes=routes_for(settings.max_queue_wait_time, settings.long_batch_wait_s),
    )
    try:
        yield
    finally:
        await client.aclose()


_settings = get_settings()
access.configure(_settings.log_level)
in_flight = InFlight(_settings.max_in_flight, _settings.max_batch_size, _settings.retry_after_s)

app = FastAPI(title='code judge', version=VERSION, lifespan=lifespan)
app.state.in_flight = in_flight
app.add_exception_handler(RequestValidationError, validation_error)
app.add_middleware(BodyLimit, max_body_bytes=int(_settings.max_body_mb * 1024 * 1024), in_flight=in_flight)
app.include_router(router)
app.include_router(judge_tests_router)
app.include_router(metrics.router)
