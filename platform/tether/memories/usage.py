"""How many memories a tenant stores (its ``memories`` quota, tenancy.limits.quotas):
current versions not deleted, in every relationship. A scan of the tenant's rows, run at
most once per recount interval per tenant, and only by writes that count against it."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tether.core.ids import TenantId
from tether.recall.models import Memory


async def stored_memories(session: AsyncSession, tenant_id: TenantId) -> int:
    statement = select(func.count()).where(
        Memory.tenant_id == tenant_id,
        Memory.superseded_by.is_(None),
        Memory.deleted_at.is_(None),
    )
    return int(await session.scalar(statement) or 0)
