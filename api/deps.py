"""Shared state of the gateway process, exposed as `Annotated` dependencies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from celery import Celery
from fastapi import Depends, Request

from judge.settings import Settings
from judge.transport.gateway.admission import Admission
from judge.transport.gateway.router import Router


@dataclass
class Gateway:
    """What the routes need; built once in the app's lifespan."""

    settings: Settings
    celery: Celery
    router: Router
    """Every broker shard (one unless ``JUDGE_BROKER_SHARDS`` names several) and how requests reach them."""
    admission: Admission
    """The cluster-wide in-flight count (in the first shard)."""


async def get_gateway(request: Request) -> Gateway:
    """The gateway state stored on the app."""
    gateway: Gateway = request.app.state.gateway
    return gateway


GatewayDep = Annotated[Gateway, Depends(get_gateway)]
