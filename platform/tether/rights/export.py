"""Everything Tether holds about one user, across their relationships, as JSON lines:
identity, facets, relationships, turns, memories (with versions), the global profile
and consent. Streamed in batches from a session of its own."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.models import GlobalUser, Relationship, UserFacet
from tether.core.ids import TenantId
from tether.memories.models import MemoryVersion
from tether.profiles.models import ConsentRecord, GlobalProfileField
from tether.recall.models import Memory
from tether.turns.models import Turn

BATCH = 1000
_encoder = msgspec.json.Encoder()

# Derived from the text or the other columns, not information about the user (and
# query_row is deferred: reading it would load each row again).
_SKIP = {"embedding", "tokens", "query_row"}


def _row(kind: str, row: Any) -> bytes:
    values = {c.key: getattr(row, c.key) for c in row.__table__.columns if c.key not in _SKIP}
    return _encoder.encode({"kind": kind, **values}) + b"\n"


async def _paged(
    sessions: async_sessionmaker[AsyncSession],
    model: Any,
    where: Sequence[Any],
    kind: str,
) -> AsyncIterator[bytes]:
    after: Any = None
    while True:
        async with sessions() as session:
            statement = select(model).where(*where).order_by(model.id).limit(BATCH)
            if after is not None:
                statement = statement.where(model.id > after)
            rows = list((await session.execute(statement)).scalars())
        if not rows:
            return
        for row in rows:
            yield _row(kind, row)
        after = rows[-1].id


async def export_user(
    sessions: async_sessionmaker[AsyncSession], tenant_id: TenantId, user_id: uuid.UUID
) -> AsyncIterator[bytes]:
    """The caller has checked the user exists in the tenant (and audited the export)."""
    async with sessions() as session:
        user = (
            await session.execute(
                select(GlobalUser).where(
                    GlobalUser.tenant_id == tenant_id, GlobalUser.id == user_id
                )
            )
        ).scalar_one_or_none()
        if user is None:
            return
        yield _row("user", user)
        for facet in (
            await session.execute(
                select(UserFacet).where(
                    UserFacet.tenant_id == tenant_id, UserFacet.global_user_id == user_id
                )
            )
        ).scalars():
            yield _row("facet", facet)
        relationships = list(
            (
                await session.execute(
                    select(Relationship).where(
                        Relationship.tenant_id == tenant_id, Relationship.global_user_id == user_id
                    )
                )
            ).scalars()
        )
        for relationship in relationships:
            yield _row("relationship", relationship)
        for field in (
            await session.execute(
                select(GlobalProfileField).where(
                    GlobalProfileField.tenant_id == tenant_id,
                    GlobalProfileField.global_user_id == user_id,
                )
            )
        ).scalars():
            yield _row("profile_field", field)
    async for line in _paged(
        sessions,
        ConsentRecord,
        [ConsentRecord.tenant_id == tenant_id, ConsentRecord.global_user_id == user_id],
        "consent",
    ):
        yield line
    for relationship in relationships:
        scoped = (relationship.id, tenant_id)
        for model, kind in ((Turn, "turn"), (Memory, "memory"), (MemoryVersion, "memory_version")):
            where = [model.relationship_id == scoped[0], model.tenant_id == scoped[1]]
            async for line in _paged(sessions, model, where, kind):
                yield line
