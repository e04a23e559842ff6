"""Everything Tether holds about one user, across their relationships, as JSON lines:
identity, facets, relationships, turns, memories (with versions), the global profile
and consent. Streamed in batches from sessions of its own, bound to the tenant.

The first line says what the export is: ``complete`` when every row is in it (a
data-subject export by staff allowed to see creators' private notes), otherwise the
kinds of rows withheld from this caller (a gateway never receives private notes)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import msgspec
from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.access.principal import Principal
from tenancy.audit.access import AccessLog
from tenancy.audit.log import Actor, AuditLog
from tenancy.models import GlobalUser, Relationship, UserFacet
from tenancy.relationships.directory import RelationshipCard
from tether.core.ids import TenantId
from tether.core.tenant_sessions import tenant_session
from tether.memories.models import MemoryVersion
from tether.profiles.models import ConsentRecord, GlobalProfileField
from tether.recall.models import Memory
from tether.turns.models import Turn

BATCH = 1000
PRIVATE_NOTES = "creator_private_notes"
_encoder = msgspec.json.Encoder()

# Derived from the text or the other columns, not information about the user (and
# query_row is deferred: reading it would load each row again).
_SKIP = {"embedding", "tokens", "query_row"}


def _row(kind: str, row: Any) -> bytes:
    values = {c.key: getattr(row, c.key) for c in row.__table__.columns if c.key not in _SKIP}
    return _encoder.encode({"kind": kind, **values}) + b"\n"


def _header(user_id: uuid.UUID, complete: bool) -> bytes:
    withheld = [] if complete else [PRIVATE_NOTES]
    line = {"kind": "export", "user_id": user_id, "complete": complete, "withheld": withheld}
    return _encoder.encode(line) + b"\n"


async def _paged(
    sessions: async_sessionmaker[AsyncSession],
    tenant_id: TenantId,
    model: Any,
    where: Sequence[ColumnElement[bool]],
    kind: str,
) -> AsyncIterator[bytes]:
    after: Any = None
    while True:
        async with tenant_session(sessions, tenant_id) as session:
            statement = select(model).where(*where).order_by(model.id).limit(BATCH)
            if after is not None:
                statement = statement.where(model.id > after)
            rows = list((await session.execute(statement)).scalars())
        if not rows:
            return
        for row in rows:
            yield _row(kind, row)
        after = rows[-1].id


def _content(
    relationship_id: uuid.UUID, tenant_id: TenantId, complete: bool
) -> list[tuple[Any, str, list[ColumnElement[bool]]]]:
    """The relationship's content tables, each with its scope (and, for a caller who
    may not see private notes, without them and their versions)."""
    tables: list[tuple[Any, str, list[ColumnElement[bool]]]] = []
    for model, kind in ((Turn, "turn"), (Memory, "memory"), (MemoryVersion, "memory_version")):
        where = [model.relationship_id == relationship_id, model.tenant_id == tenant_id]
        tables.append((model, kind, where))
    if not complete:
        private = select(Memory.id).where(
            Memory.relationship_id == relationship_id,
            Memory.tenant_id == tenant_id,
            Memory.private_to_creator.is_(True),
        )
        tables[1][2].append(Memory.private_to_creator.is_(False))
        tables[2][2].append(MemoryVersion.memory_id.not_in(private))
    return tables


async def export_user(
    sessions: async_sessionmaker[AsyncSession],
    tenant_id: TenantId,
    user_id: uuid.UUID,
    *,
    complete: bool,
) -> AsyncIterator[bytes]:
    """The caller has checked the user is within its reach (and audited the export);
    ``complete`` says whether creators' private notes are included."""
    async with tenant_session(sessions, tenant_id) as session:
        user = (
            await session.execute(
                select(GlobalUser).where(
                    GlobalUser.tenant_id == tenant_id, GlobalUser.id == user_id
                )
            )
        ).scalar_one_or_none()
        if user is None:
            return
        yield _header(user_id, complete)
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
    consent = [ConsentRecord.tenant_id == tenant_id, ConsentRecord.global_user_id == user_id]
    async for line in _paged(sessions, tenant_id, ConsentRecord, consent, "consent"):
        yield line
    for relationship in relationships:
        for model, kind, where in _content(relationship.id, tenant_id, complete):
            async for line in _paged(sessions, tenant_id, model, where, kind):
                yield line


async def export_relationship(
    sessions: async_sessionmaker[AsyncSession],
    tenant_id: TenantId,
    relationship_id: uuid.UUID,
    *,
    complete: bool,
) -> AsyncIterator[bytes]:
    """One relationship's turns, memories and memory versions, in the user export's
    format (the caller has opened the relationship within its reach and audited it)."""
    header = {"kind": "export", "relationship_id": relationship_id, "complete": complete}
    header["withheld"] = [] if complete else [PRIVATE_NOTES]
    yield _encoder.encode(header) + b"\n"
    for model, kind, where in _content(relationship_id, tenant_id, complete):
        async for line in _paged(sessions, tenant_id, model, where, kind):
            yield line


async def audited_relationship_export(
    session: AsyncSession,
    sessions: async_sessionmaker[AsyncSession],
    card: RelationshipCard,
    principal: Principal,
    complete: bool,
    access: AccessLog | None = None,
) -> AsyncIterator[bytes]:
    """Record the export in the audit log (in the request's transaction) and the access
    log (no memory ids: an export reads them all), then the lines; the caller opened
    ``card`` within its reach."""
    if access is not None:
        access.note(principal, "export", card.id, card.global_user_id)
    await AuditLog(session).record(
        principal.tenant_id,
        Actor.of(principal),
        "export",
        "relationship_memory",
        relationship_id=card.id,
        global_user_id=card.global_user_id,
        detail={"complete": complete},
    )
    return export_relationship(sessions, principal.tenant_id, card.id, complete=complete)
