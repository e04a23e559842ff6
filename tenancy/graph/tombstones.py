"""Erasure tombstones: the relationships of erased users, which every writer that may
run after an erasure (a redelivered or late Celery message, the reconciliation sweep)
checks before it writes, so erased content cannot come back (decision 0046)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.ids import RelationshipScope
from tenancy.models import ErasureTombstone


async def bury(
    session: AsyncSession, tenant_id: uuid.UUID, relationship_ids: Sequence[uuid.UUID]
) -> None:
    """Record the erased relationships (in the erasure's transaction)."""
    if not relationship_ids:
        return
    rows = [{"tenant_id": tenant_id, "relationship_id": r} for r in relationship_ids]
    await session.execute(insert(ErasureTombstone).values(rows).on_conflict_do_nothing())


async def is_erased(session: AsyncSession, scope: RelationshipScope) -> bool:
    """Whether the relationship belonged to an erased user (one primary-key probe)."""
    statement = select(ErasureTombstone.relationship_id).where(
        ErasureTombstone.tenant_id == scope.tenant_id,
        ErasureTombstone.relationship_id == scope.relationship_id,
    )
    return (await session.execute(statement)).first() is not None
