"""The FastAPI gateway: lifespan, middleware, routes; nothing else."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError

from api import access, metrics
from api.backpressure import BodyLimit, InFlight
from api.deps import Gateway
from api.errors import validation_error
from api.judge_tests import router as judge_tests_router
from api.routes import router
from judge.app import app as celery_app
from judge.settings import get_settings
from judge.transport.paths import close_dispatcher, open_dispatcher
from judge.transport.shard import Shard
from judge.version import VERSION


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings = get_settings()
    shard = Shard.from_settings(settings)
    dispatcher = open_dispatcher(celery_app, shard, settings.transport)
    app.state.gateway = Gateway(
        settings=settings,
        celery=celery_app,
        shard=shard,
        dispatcher=dispatcher,
        wait_s={
            'single': settings.max_queue_wait_time,
            'batch': settings.max_queue_wait_time,
            'long': settings.long_batch_wait_s,
        },
    )
    try:
        yield
    finally:
        await close_dispatcher(dispatcher)


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
