"""Shared state of the gateway process, exposed as `Annotated` dependencies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import redis.asyncio as aioredis
from celery import Celery
from fastapi import Depends, Request

from api.dispatch import Dispatcher, Route
from judge.settings import Settings


@dataclass
class Gateway:
    """What the routes need; built once in the app's lifespan."""

    settings: Settings
    celery: Celery
    redis: aioredis.Redis
    dispatcher: Dispatcher
    routes: dict[str, Route]


async def get_gateway(request: Request) -> Gateway:
    """The gateway state stored on the app."""
    gateway: Gateway = request.app.state.gateway
    return gateway


GatewayDep = Annotated[Gateway, Depends(get_gateway)]
