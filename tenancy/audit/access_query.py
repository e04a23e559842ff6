"""The compliance question: which memories of whom were shown to whom, and which went
into which prompt, between two times (``GET /v1/audit/access``)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import msgspec
from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.audit.access import PURPOSES
from tenancy.audit.models import AuditAccessEvent
from tenancy.audit.schemas import AccessEventRead, AccessPage
from tether.core.errors import BadRequest
from tether.core.ids import TenantId
from tether.core.pagination import decode_cursor, next_cursor


class AccessFilterInvalid(BadRequest):
    code = "access_filter_invalid"


def id_floor(moment: datetime) -> uuid.UUID:
    """The smallest UUIDv7 of that millisecond: ids are time-ordered, so a time range is
    also an id range, which the (tenant, user, id) index serves in order."""
    return uuid.UUID(int=int(moment.timestamp() * 1000) << 80)


class AccessFilter(msgspec.Struct):
    global_user_id: uuid.UUID | None = None
    relationship_id: uuid.UUID | None = None
    actor_key_id: uuid.UUID | None = None
    purpose: str | None = None
    memory_id: uuid.UUID | None = None
    since: datetime | None = None
    until: datetime | None = None

    def checked(self) -> AccessFilter:
        """Itself, or a 400 naming what is wrong."""
        for name in ("since", "until"):
            value: datetime | None = getattr(self, name)
            if value is not None and value.tzinfo is None:
                raise AccessFilterInvalid(f"{name} needs a time zone (e.g. 2026-12-07T18:00:00Z)")
        if self.since and self.until and self.since >= self.until:
            raise AccessFilterInvalid("from must be before to")
        if self.purpose is not None and self.purpose not in PURPOSES:
            raise AccessFilterInvalid(f"purpose must be one of {', '.join(PURPOSES)}")
        return self

    def criteria(self) -> list[ColumnElement[bool]]:
        found: list[ColumnElement[bool]] = []
        for name in ("global_user_id", "relationship_id", "actor_key_id", "purpose"):
            value = getattr(self, name)
            if value is not None:
                found.append(getattr(AuditAccessEvent, name) == value)
        if self.memory_id is not None:
            found.append(AuditAccessEvent.memory_ids.contains([self.memory_id]))
        if self.since is not None:
            found += [
                AuditAccessEvent.id >= id_floor(self.since),
                AuditAccessEvent.at >= self.since,
            ]
        if self.until is not None:
            ceiling = id_floor(self.until.astimezone(UTC)).int + (1 << 80)
            found += [
                AuditAccessEvent.id < uuid.UUID(int=ceiling),
                AuditAccessEvent.at < self.until,
            ]
        return found


def read(row: AuditAccessEvent) -> AccessEventRead:
    return AccessEventRead(
        row.id,
        row.at,
        row.actor_key_id,
        row.actor_role,
        row.actor_subject,
        row.purpose,
        row.relationship_id,
        row.global_user_id,
        row.request_id,
        list(row.memory_ids),
        row.sealed_seq,
    )


async def access_page(
    session: AsyncSession, tenant_id: TenantId, where: AccessFilter, cursor: str | None, limit: int
) -> AccessPage:
    """One page of the tenant's matching access events, oldest first."""
    statement = (
        select(AuditAccessEvent)
        .where(AuditAccessEvent.tenant_id == tenant_id, *where.checked().criteria())
        .order_by(AuditAccessEvent.id)
        .limit(limit)
    )
    after = decode_cursor(cursor)
    if after is not None:
        statement = statement.where(AuditAccessEvent.id > after)
    rows = list((await session.execute(statement)).scalars())
    return AccessPage([read(r) for r in rows], next_cursor(rows, limit))
