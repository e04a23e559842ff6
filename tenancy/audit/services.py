"""Reading, exporting and verifying a tenant's audit log (compliance and admin)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import datetime

import msgspec
from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.audit.chain import GENESIS, HASHED_FIELDS, event_hash
from tenancy.audit.models import AuditEvent
from tenancy.audit.schemas import AuditEventRead, AuditPage, AuditVerification
from tether.core.ids import TenantId
from tether.core.pagination import decode_cursor, next_cursor
from tether.core.tenant_sessions import tenant_session

VERIFY_BATCH = 1000
_encoder = msgspec.json.Encoder()


def read(e: AuditEvent) -> AuditEventRead:
    return AuditEventRead(
        e.id,
        e.seq,
        e.at,
        e.actor_key_id,
        e.actor_role,
        e.actor_subject,
        e.action,
        e.object,
        e.decision,
        e.matched_rule,
        e.relationship_id,
        e.global_user_id,
        e.request_id,
        e.detail,
        e.prev_hash,
        e.hash,
    )


class AuditFilter(msgspec.Struct):
    action: str | None = None
    object: str | None = None
    decision: str | None = None
    relationship_id: uuid.UUID | None = None
    global_user_id: uuid.UUID | None = None
    since: datetime | None = None
    until: datetime | None = None

    def criteria(self) -> list[ColumnElement[bool]]:
        found: list[ColumnElement[bool]] = []
        for name in ("action", "object", "decision", "relationship_id", "global_user_id"):
            value = getattr(self, name)
            if value is not None:
                found.append(getattr(AuditEvent, name) == value)
        if self.since is not None:
            found.append(AuditEvent.at >= self.since)
        if self.until is not None:
            found.append(AuditEvent.at < self.until)
        return found


class AuditService:
    def __init__(self, session: AsyncSession, tenant_id: TenantId) -> None:
        self._session = session
        self._tenant_id = tenant_id

    async def page(self, where: AuditFilter, cursor: str | None, limit: int) -> AuditPage:
        statement = (
            select(AuditEvent)
            .where(AuditEvent.tenant_id == self._tenant_id, *where.criteria())
            .order_by(AuditEvent.id)
            .limit(limit)
        )
        after = decode_cursor(cursor)
        if after is not None:
            statement = statement.where(AuditEvent.id > after)
        rows = list((await self._session.execute(statement)).scalars())
        return AuditPage([read(r) for r in rows], next_cursor(rows, limit))

    async def verify(self) -> AuditVerification:
        """Recompute the chain from the first event: every hash, every link, no gaps."""
        prev_hash, expected_seq, checked = GENESIS, 1, 0
        after = 0
        while True:
            statement = (
                select(AuditEvent)
                .where(AuditEvent.tenant_id == self._tenant_id, AuditEvent.seq > after)
                .order_by(AuditEvent.seq)
                .limit(VERIFY_BATCH)
            )
            rows = list((await self._session.execute(statement)).scalars())
            if not rows:
                return AuditVerification(ok=True, checked=checked)
            for row in rows:
                problem = _problem(row, prev_hash, expected_seq)
                if problem is not None:
                    return AuditVerification(False, checked, row.id, problem)
                prev_hash, expected_seq, after = row.hash, row.seq + 1, row.seq
                checked += 1


def _problem(row: AuditEvent, prev_hash: str, expected_seq: int) -> str | None:
    if row.seq != expected_seq:
        return f"sequence gap: expected {expected_seq}, found {row.seq} (a row was removed)"
    if row.prev_hash != prev_hash:
        return "the link to the previous event does not match"
    fields = {name: getattr(row, name) for name in HASHED_FIELDS}
    if event_hash(prev_hash, fields) != row.hash:
        return "the event's content does not match its hash (it was changed)"
    return None


async def export_lines(
    sessions: async_sessionmaker[AsyncSession], tenant_id: TenantId, where: AuditFilter
) -> AsyncIterator[bytes]:
    """The matching events as JSON lines, read in batches in their own session so a long
    export neither holds the request's transaction nor the whole log in memory."""
    after: uuid.UUID | None = None
    while True:
        async with tenant_session(sessions, tenant_id) as session:
            statement = (
                select(AuditEvent)
                .where(AuditEvent.tenant_id == tenant_id, *where.criteria())
                .order_by(AuditEvent.id)
                .limit(VERIFY_BATCH)
            )
            if after is not None:
                statement = statement.where(AuditEvent.id > after)
            rows = list((await session.execute(statement)).scalars())
        if not rows:
            return
        for row in rows:
            yield _encoder.encode(read(row)) + b"\n"
        after = rows[-1].id
