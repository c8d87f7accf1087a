"""The FastAPI gateway: lifespan, routes; nothing else."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis.asyncio as aioredis
from fastapi import FastAPI

from api.deps import Gateway
from api.dispatch import Dispatcher, routes_for
from api.routes import router
from judge.app import app as celery_app
from judge.settings import get_settings
from judge.version import VERSION


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings = get_settings()
    client = aioredis.Redis.from_url(settings.redis_uri, health_check_interval=25, socket_connect_timeout=5)
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


app = FastAPI(title='code judge', version=VERSION, lifespan=lifespan)
app.include_router(router)
