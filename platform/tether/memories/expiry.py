"""The expiry sweep: memories whose ``expires_at`` has passed become inactive, with a
version row saying so. Batched and idempotent (an expired memory is inactive, so a
second sweep does not see it)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.ids import RelationshipId, RelationshipScope
from tether.core.database import transaction
from tether.core.ids import TenantId
from tether.memories.writer import Invalidate, MemoryWriter
from tether.recall.models import Memory

BATCH = 500


async def _due(
    session: AsyncSession, now: datetime
) -> list[tuple[uuid.UUID, uuid.UUID, uuid.UUID]]:
    # Tenant-wide by nature (a maintenance sweep over ids and times, not content).
    statement = (
        select(Memory.tenant_id, Memory.relationship_id, Memory.id)
        .where(Memory.is_active.is_(True), Memory.expires_at.is_not(None), Memory.expires_at <= now)
        .limit(BATCH)
    )
    return [(t, r, m) for t, r, m in await session.execute(statement)]


async def expire_due(
    sessions: async_sessionmaker[AsyncSession], invalidate: Invalidate, now: datetime
) -> int:
    """Deactivate every memory due at ``now``, a batch per transaction; how many."""
    total = 0
    while True:
        async with transaction(sessions) as session:
            due = await _due(session, now)
            for tenant_id, relationship_id, memory_id in due:
                scope = RelationshipScope(TenantId(tenant_id), RelationshipId(relationship_id))
                writer = MemoryWriter(session, scope, None, invalidate, "system:expiry")
                memory = await session.get(
                    Memory, (relationship_id, memory_id), with_for_update=True
                )
                if memory is not None and memory.is_active:
                    await writer.change(
                        memory, "expired", f"expired at {memory.expires_at}", is_active=False
                    )
                    total += 1
        if len(due) < BATCH:
            return total
