"""Sessions of work outside a request (index loads, indexing runs, hot-tier fills), bound to
one tenant so row-level security holds them to it like a request."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tether.core.database import TENANT_INFO, transaction
from tether.core.ids import TenantId
from tether.core.unit_of_work import run_after_commit

# A check run in a batch's transaction before the batch writes (for example: is the
# re-embed run that made these vectors still wanted?); it raises to roll the batch back.
BatchGuard = Callable[[AsyncSession], Awaitable[None]]


@asynccontextmanager
async def tenant_session(
    factory: async_sessionmaker[AsyncSession], tenant_id: TenantId
) -> AsyncIterator[AsyncSession]:
    """A session for ``tenant_id`` whose first statement begins its transaction (so the
    caller may choose an isolation level); closed without committing."""
    async with factory() as session:
        session.info[TENANT_INFO] = str(tenant_id)
        yield session


@asynccontextmanager
async def tenant_transaction(
    factory: async_sessionmaker[AsyncSession], tenant_id: TenantId
) -> AsyncIterator[AsyncSession]:
    """One transaction for ``tenant_id``: committed on success, rolled back on error."""
    async with tenant_session(factory, tenant_id) as session:
        async with session.begin():
            yield session
        await run_after_commit(session)


async def tenant_ids(factory: async_sessionmaker[AsyncSession]) -> list[TenantId]:
    """Every tenant's id, for the periodic sweeps that go tenant by tenant (a system
    function of migration 0017: ids only)."""
    async with transaction(factory) as session:
        rows = await session.execute(text("SELECT tether_tenant_ids()"))
        return [TenantId(uuid.UUID(str(row[0]))) for row in rows]
