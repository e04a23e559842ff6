"""Litestar dependency providers every domain shares: resources and the transaction."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from litestar import Request
from litestar.datastructures import State
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession

from tether.core.database import TENANT_INFO
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.core.unit_of_work import discard_after_commit, run_after_commit


def provide_resources(state: State) -> Resources:
    resources: Resources = state.resources
    return resources


def provide_settings(state: State) -> Settings:
    resources: Resources = state.resources
    return resources.settings


def provide_redis(state: State) -> Redis:
    resources: Resources = state.resources
    return resources.redis


async def provide_session(
    state: State, request: Request[Any, Any, Any]
) -> AsyncIterator[AsyncSession]:
    """One transaction per request: committed after the handler returns, rolled back
    if it raises (Litestar throws the handler's exception into this generator). It is
    bound to the caller's tenant, so row-level security hides every other tenant's
    content even from a query that forgot its tenant filter."""
    resources: Resources = state.resources
    async with resources.sessions() as session:
        tenant = getattr(request.scope.get("user"), "tenant_id", None)
        if tenant is not None:  # unauthenticated: no tenant, so no rows
            session.info[TENANT_INFO] = str(tenant)
        try:
            async with session.begin():
                yield session
        except BaseException:
            discard_after_commit(session)
            raise
        await run_after_commit(session)
