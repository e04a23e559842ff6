"""The beat's audit work: seal every tenant's access events, sign every tenant's head."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.audit.checkpoints import write_checkpoint
from tenancy.audit.sealing import seal_all
from tether.core.ids import TenantId
from tether.core.tenant_sessions import tenant_transaction


async def tenant_ids(sessions: async_sessionmaker[AsyncSession]) -> list[TenantId]:
    """Every tenant (a system function of migration 0017: ids only)."""
    async with sessions() as session:
        found = await session.scalars(text("SELECT id FROM tether_tenant_ids() AS id"))
        return [TenantId(tenant_id) for tenant_id in found]


async def seal_every_tenant(sessions: async_sessionmaker[AsyncSession], batch: int) -> int:
    """Seal what every tenant has unsealed; how many access events were sealed."""
    return sum([await seal_all(sessions, tenant, batch) for tenant in await tenant_ids(sessions)])


async def checkpoint_every_tenant(sessions: async_sessionmaker[AsyncSession], batch: int) -> int:
    """Seal, then sign a checkpoint of each tenant's head; how many were written."""
    written = 0
    for tenant in await tenant_ids(sessions):
        await seal_all(sessions, tenant, batch)
        async with tenant_transaction(sessions, tenant) as session:
            await write_checkpoint(session, tenant)
        written += 1
    return written
