"""The expiry sweep: memories whose ``expires_at`` has passed become inactive, with a
version row saying so. Batched and idempotent (an expired memory is inactive, so a
second sweep does not see it). The due memories are found across tenants by a system
function of migration 0017 (ids only); each tenant's are expired in a transaction bound
to it."""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.ids import RelationshipId, RelationshipScope
from tether.core.database import transaction
from tether.core.ids import TenantId
from tether.core.tenant_sessions import tenant_transaction
from tether.memories.writer import Invalidate, MemoryWriter
from tether.recall.models import Memory

BATCH = 500
_DUE = text("SELECT tenant_id, relationship_id, memory_id FROM tether_expired_memories(:now, :n)")
Due = dict[uuid.UUID, list[tuple[uuid.UUID, uuid.UUID]]]


async def _due(sessions: async_sessionmaker[AsyncSession], now: datetime) -> tuple[int, Due]:
    """How many memories are due (up to ``BATCH``), and they by tenant."""
    async with transaction(sessions) as session:
        rows = list(await session.execute(_DUE, {"now": now, "n": BATCH}))
    due: Due = defaultdict(list)
    for tenant_id, relationship_id, memory_id in rows:
        due[tenant_id].append((relationship_id, memory_id))
    return len(rows), due


async def _expire(
    session: AsyncSession,
    tenant_id: TenantId,
    memories: list[tuple[uuid.UUID, uuid.UUID]],
    invalidate: Invalidate,
    now: datetime,
) -> int:
    expired = 0
    for relationship_id, memory_id in memories:
        scope = RelationshipScope(tenant_id, RelationshipId(relationship_id))
        memory = await session.get(Memory, (relationship_id, memory_id), with_for_update=True)
        due = memory is not None and memory.expires_at is not None and memory.expires_at <= now
        if memory is not None and due and memory.is_active:
            writer = MemoryWriter(session, scope, None, invalidate, "system:expiry")
            await writer.change(
                memory, "expired", f"expired at {memory.expires_at}", is_active=False
            )
            expired += 1
    return expired


async def expire_due(
    sessions: async_sessionmaker[AsyncSession], invalidate: Invalidate, now: datetime
) -> int:
    """Deactivate every memory due at ``now``, a batch at a time; how many."""
    total = 0
    while True:
        found, due = await _due(sessions, now)
        expired = 0
        for tenant_id, memories in due.items():
            async with tenant_transaction(sessions, TenantId(tenant_id)) as session:
                expired += await _expire(session, TenantId(tenant_id), memories, invalidate, now)
        total += expired
        # A full batch of which none expired would come back the same: stop there.
        if found < BATCH or not expired:
            return total
