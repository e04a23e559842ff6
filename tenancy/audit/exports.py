"""Signed, streamed exports of the audit chain or the access log (decision 0071).

An export is first recorded (an ``audit.export`` event with its filters, committed before
a byte is sent), then anchored: the chain head read after that event bounds the range,
so every exported entry is covered by the signed head in the trailer. Rows are read in
keyset batches, each in its own short session: a range of a million rows streams in
the memory of one batch and holds no transaction open between batches.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import msgspec
from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.audit.access_query import AccessFilter
from tenancy.audit.access_query import read as read_access
from tenancy.audit.anchors import latest_anchor
from tenancy.audit.checkpoints import head, latest_checkpoint
from tenancy.audit.export_format import LineSigner
from tenancy.audit.log import Actor, AuditLog
from tenancy.audit.models import AuditAccessEvent, AuditEvent
from tenancy.audit.services import AuditFilter, read
from tether.core.ids import TenantId, new_id
from tether.core.tenant_sessions import tenant_session, tenant_transaction

BATCH = 1000
ExportKind = Literal["audit", "access"]
_encoder = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class ExportPlan:
    """What one export covers: its id, kind and filters, and the chain it is anchored
    to (the head after the export was recorded, and the retention anchor if any)."""

    export_id: str
    tenant_id: TenantId
    kind: ExportKind
    filters: dict[str, str]
    criteria: Sequence[ColumnElement[bool]]
    chain: dict[str, Any]
    actor: Actor

    @property
    def filename(self) -> str:
        return f"{self.kind}-export-{self.export_id}.jsonl"

    def trailer_fields(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "tenant_id": str(self.tenant_id),
            "export_id": self.export_id,
            "exported_at": datetime.now(UTC).isoformat(),
            "exported_by": {
                "key_id": None if self.actor.key_id is None else str(self.actor.key_id),
                "role": self.actor.role,
            },
            "filters": self.filters,
            "chain": self.chain,
        }


async def _chain(session: AsyncSession, tenant_id: TenantId) -> dict[str, Any]:
    current = await head(session, tenant_id)
    anchor = await latest_anchor(session, tenant_id)
    checkpoint = await latest_checkpoint(session, tenant_id)
    return {
        "head_seq": current.seq,
        "head_hash": current.hash,
        "keyed_from": current.keyed_from,
        "anchored_at_seq": 0 if anchor is None else anchor.seq,
        "latest_checkpoint": None
        if checkpoint is None
        else {"seq": checkpoint.seq, "hash": checkpoint.hash, "at": checkpoint.at.isoformat()},
    }


async def plan_export(
    sessions: async_sessionmaker[AsyncSession],
    tenant_id: TenantId,
    actor: Actor,
    where: AuditFilter | AccessFilter,
) -> ExportPlan:
    """Validate the filters (a 400 problem before anything streams), record the export
    in the chain (filters only, never content) and read the head it is anchored to."""
    kind: ExportKind = "audit" if isinstance(where, AuditFilter) else "access"
    filters = _given(where.checked())
    export_id = str(new_id())
    async with tenant_transaction(sessions, tenant_id) as session:
        await AuditLog(session).record(
            tenant_id,
            actor,
            "audit.export",
            "audit",
            detail={"export_id": export_id, "kind": kind, "filters": filters},
        )
    async with tenant_session(sessions, tenant_id) as session:
        chain = await _chain(session, tenant_id)
    criteria = _bounded(where, chain["head_seq"])
    return ExportPlan(export_id, tenant_id, kind, filters, criteria, chain, actor)


def _given(where: AuditFilter | AccessFilter) -> dict[str, str]:
    found = {name: getattr(where, name) for name in where.__struct_fields__}
    return {
        name: value.isoformat() if isinstance(value, datetime) else str(value)
        for name, value in found.items()
        if value is not None
    }


def _bounded(where: AuditFilter | AccessFilter, head_seq: int) -> list[ColumnElement[bool]]:
    """The filters, limited to what the signed head covers (access events: those whose
    batch was sealed into the chain at or before it)."""
    if isinstance(where, AuditFilter):
        return [*where.criteria(), AuditEvent.seq <= head_seq]
    return [*where.criteria(), AuditAccessEvent.sealed_seq <= head_seq]


async def _audit_batch(
    session: AsyncSession, plan: ExportPlan, after: Any, limit: int
) -> tuple[list[bytes], Any]:
    statement = (
        select(AuditEvent)
        .where(AuditEvent.tenant_id == plan.tenant_id, AuditEvent.seq > after, *plan.criteria)
        .order_by(AuditEvent.seq)
        .limit(limit)
    )
    rows = list((await session.execute(statement)).scalars())
    return [_encoder.encode(read(r)) for r in rows], rows[-1].seq if rows else after


async def _access_batch(
    session: AsyncSession, plan: ExportPlan, after: Any, limit: int
) -> tuple[list[bytes], Any]:
    statement = (
        select(AuditAccessEvent)
        .where(
            AuditAccessEvent.tenant_id == plan.tenant_id,
            AuditAccessEvent.id > after,
            *plan.criteria,
        )
        .order_by(AuditAccessEvent.id)
        .limit(limit)
    )
    rows = list((await session.execute(statement)).scalars())
    return [_encoder.encode(read_access(r)) for r in rows], rows[-1].id if rows else after


async def export_stream(
    sessions: async_sessionmaker[AsyncSession], plan: ExportPlan, batch: int = BATCH
) -> AsyncIterator[bytes]:
    """The signed lines of the export, then its trailer."""
    signer = LineSigner(plan.tenant_id, plan.export_id)
    fetch = _audit_batch if plan.kind == "audit" else _access_batch
    after: Any = 0 if plan.kind == "audit" else uuid.UUID(int=0)
    while True:
        async with tenant_session(sessions, plan.tenant_id) as session:
            entries, after = await fetch(session, plan, after, batch)
        if entries:
            yield b"".join(signer.line(entry) for entry in entries)
        if len(entries) < batch:
            break
    yield signer.trailer(plan.tenant_id, plan.trailer_fields())
