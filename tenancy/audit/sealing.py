"""Sealing access events into the audit chain (decision 0042).

A seal takes up to ``limit`` unsealed events of one tenant (``SKIP LOCKED``: concurrent
sealers take disjoint sets, and appenders are never waited for), computes their Merkle
root, appends one ``access.seal`` event carrying it to the chain, and marks the events
with that event's sequence number, all in one transaction. Verification recomputes each
sealed batch's root, so it covers every sealed access event.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.audit.keys import chain_key
from tenancy.audit.log import SYSTEM, AuditLog
from tenancy.audit.merkle import LEAF_FIELDS, leaf, root
from tenancy.audit.models import AuditAccessEvent
from tether.core.ids import TenantId
from tether.core.tenant_sessions import tenant_transaction

SEAL_ACTION = "access.seal"


def leaf_fields(row: AuditAccessEvent) -> dict[str, Any]:
    fields = {name: getattr(row, name) for name in LEAF_FIELDS}
    fields["memory_ids"] = [str(i) for i in row.memory_ids]
    return fields


def batch_root(tenant_id: uuid.UUID, rows: list[AuditAccessEvent]) -> str:
    key = chain_key(tenant_id)
    return root([leaf(key, leaf_fields(row)) for row in rows])


async def seal_once(session: AsyncSession, tenant_id: uuid.UUID, limit: int) -> int:
    """Seal one batch of the tenant's unsealed events; how many it sealed."""
    statement = (
        select(AuditAccessEvent)
        .where(AuditAccessEvent.tenant_id == tenant_id, AuditAccessEvent.sealed_seq.is_(None))
        .order_by(AuditAccessEvent.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    rows = list((await session.execute(statement)).scalars())
    if not rows:
        return 0
    detail = {
        "root": batch_root(tenant_id, rows),
        "count": len(rows),
        "first_id": str(rows[0].id),
        "last_id": str(rows[-1].id),
    }
    event = await AuditLog(session).record(
        tenant_id, SYSTEM, SEAL_ACTION, "access_log", detail=detail
    )
    await session.execute(
        update(AuditAccessEvent)
        .where(
            AuditAccessEvent.tenant_id == tenant_id,
            AuditAccessEvent.id.in_([row.id for row in rows]),
        )
        .values(sealed_seq=event.seq)
        .execution_options(synchronize_session=False)
    )
    return len(rows)


async def seal_all(
    sessions: async_sessionmaker[AsyncSession], tenant_id: TenantId, limit: int
) -> int:
    """Seal every unsealed event of the tenant, a batch per transaction."""
    total = 0
    while True:
        async with tenant_transaction(sessions, tenant_id) as session:
            sealed = await seal_once(session, tenant_id, limit)
        total += sealed
        if sealed < limit:
            return total
