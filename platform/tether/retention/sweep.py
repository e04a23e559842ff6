"""The retention sweep (decision 0046). For each tenant, with its settings read fresh:
raw turns older than ``retention.raw_turns_days`` are deleted (memories stay), and
memories of each type in ``retention.memory_type_days`` older than that expire (become
inactive, with a version saying why, as the expiry sweep does), and audit events older
than ``retention.audit_years`` are removed behind a signed anchor, with the access
events their seals cover (decision 0072). In batches, each batch and the run's progress
in one transaction; a finished run is recorded in the audit log with what it removed
(counts, never content)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.audit.anchors import prune_batch
from tenancy.audit.log import SYSTEM, AuditLog
from tenancy.ids import RelationshipId, RelationshipScope
from tenancy.settings.schemas import RetentionSettings
from tenancy.settings.services import current_settings
from tether.core.database_errors import DATABASE_ERRORS
from tether.core.ids import TenantId
from tether.core.tenant_sessions import tenant_ids, tenant_transaction
from tether.memories.writer import Invalidate, MemoryWriter
from tether.recall.models import Memory
from tether.retention.models import RetentionRun
from tether.turns.models import Turn

log = logging.getLogger(__name__)
BATCH = 1000
RAW_TURNS = "raw_turns"
AUDIT = "audit"
# One batch of a kind: remove up to ``limit`` rows older than the cutoff; how many.
Step = Callable[[AsyncSession, TenantId, datetime, int], Awaitable[int]]


async def purge_turns(
    session: AsyncSession, tenant_id: TenantId, cutoff: datetime, limit: int
) -> int:
    """Delete up to ``limit`` raw turns that happened before ``cutoff``."""
    keys = (
        select(Turn.relationship_id, Turn.id)
        .where(Turn.tenant_id == tenant_id, Turn.at < cutoff)
        .limit(limit)
    )
    rows = list(await session.execute(keys))
    if not rows:
        return 0
    statement = delete(Turn).where(
        Turn.tenant_id == tenant_id,
        tuple_(Turn.relationship_id, Turn.id).in_([tuple(r) for r in rows]),
    )
    await session.execute(statement.execution_options(synchronize_session=False))
    return len(rows)


async def prune_audit(
    session: AsyncSession, tenant_id: TenantId, cutoff: datetime, limit: int
) -> int:
    """Remove up to ``limit`` of the oldest audit events from before ``cutoff``, after a
    signed anchor that verification starts from (the run is named by its cutoff)."""
    return await prune_batch(session, tenant_id, cutoff, limit, f"retention:{AUDIT}@{cutoff}")


def years_before(moment: datetime, years: int) -> datetime:
    """The same calendar day ``years`` earlier (29 February becomes the 28th)."""
    try:
        return moment.replace(year=moment.year - years)
    except ValueError:
        return moment.replace(year=moment.year - years, day=28)


def expire_memories(memory_type: str, invalidate: Invalidate) -> Step:
    async def step(session: AsyncSession, tenant_id: TenantId, cutoff: datetime, limit: int) -> int:
        statement = (
            select(Memory)
            .where(
                Memory.tenant_id == tenant_id,
                Memory.memory_type == memory_type,
                Memory.created_at < cutoff,
                Memory.is_active.is_(True),
                Memory.deleted_at.is_(None),
            )
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        memories = list((await session.execute(statement)).scalars())
        for memory in memories:
            scope = RelationshipScope(tenant_id, RelationshipId(memory.relationship_id))
            writer = MemoryWriter(session, scope, None, invalidate, "system:retention")
            reason = f"retention: {memory_type} memories are kept until {cutoff.isoformat()}"
            await writer.change(memory, "expired", reason, is_active=False)
        return len(memories)

    return step


async def _start(
    session: AsyncSession, tenant_id: TenantId, kind: str, cutoff: datetime
) -> RetentionRun:
    """The run under way for this kind (resumed with its cutoff), or a new one."""
    run = await session.get(RetentionRun, (tenant_id, kind), with_for_update=True)
    now = datetime.now(UTC)
    if run is None:
        run = RetentionRun(tenant_id=tenant_id, kind=kind, cutoff=cutoff, removed=0, batches=0)
        run.started_at = run.updated_at = now
        session.add(run)
    elif run.finished_at is not None:
        run.cutoff, run.removed, run.batches = cutoff, 0, 0
        run.started_at = run.updated_at = now
        run.finished_at = None
    await session.flush()
    return run


async def run_kind(
    sessions: async_sessionmaker[AsyncSession],
    tenant_id: TenantId,
    kind: str,
    cutoff: datetime,
    step: Step,
    batch: int = BATCH,
) -> int:
    """Sweep one kind for one tenant to its end; what this call removed."""
    removed_here = 0
    async with tenant_transaction(sessions, tenant_id) as session:
        run = await _start(session, tenant_id, kind, cutoff)
        cutoff = run.cutoff  # a resumed run keeps its own
    while True:
        async with tenant_transaction(sessions, tenant_id) as session:
            current = await session.get(RetentionRun, (tenant_id, kind), with_for_update=True)
            if current is None:  # made above; gone only with its tenant
                return removed_here
            run = current
            removed = await step(session, tenant_id, cutoff, batch)
            run.removed += removed
            run.batches += 1
            run.updated_at = datetime.now(UTC)
            removed_here += removed
            if removed < batch:
                run.finished_at = run.updated_at
                await AuditLog(session).record(
                    tenant_id,
                    SYSTEM,
                    "retention.sweep",
                    "audit" if kind == AUDIT else "relationship_memory",
                    detail={
                        "kind": kind,
                        "cutoff": cutoff.isoformat(),
                        "removed": run.removed,
                        "batches": run.batches,
                    },
                )
                return removed_here


def _plan(
    retention: RetentionSettings, now: datetime, invalidate: Invalidate
) -> list[tuple[str, datetime, Step]]:
    plan: list[tuple[str, datetime, Step]] = []
    if retention.raw_turns_days is not None:
        plan.append((RAW_TURNS, now - timedelta(days=retention.raw_turns_days), purge_turns))
    for memory_type, days in retention.memory_type_days.items():
        step = expire_memories(memory_type, invalidate)
        plan.append((f"memories:{memory_type}", now - timedelta(days=days), step))
    if retention.audit_years is not None:
        plan.append((AUDIT, years_before(now, retention.audit_years), prune_audit))
    return plan


async def sweep_tenant(
    sessions: async_sessionmaker[AsyncSession],
    tenant_id: TenantId,
    invalidate: Invalidate,
    now: datetime,
    batch: int = BATCH,
) -> dict[str, int]:
    """Apply one tenant's retention settings (read now: a change applies at the next
    sweep, no restart); what each kind removed."""
    async with tenant_transaction(sessions, tenant_id) as session:
        settings = await current_settings(session, tenant_id)
    removed: dict[str, int] = {}
    for kind, cutoff, step in _plan(settings.retention, now, invalidate):
        removed[kind] = await run_kind(sessions, tenant_id, kind, cutoff, step, batch)
    return removed


async def sweep(
    sessions: async_sessionmaker[AsyncSession], invalidate: Invalidate, now: datetime
) -> dict[str, int]:
    """Every tenant's retention; one tenant failing does not stop the others."""
    totals: dict[str, int] = {}
    for tenant_id in await tenant_ids(sessions):
        try:
            removed = await sweep_tenant(sessions, tenant_id, invalidate, now)
        except DATABASE_ERRORS:
            log.exception("retention sweep of tenant %s failed; it resumes next time", tenant_id)
            continue
        for kind, count in removed.items():
            totals[kind] = totals.get(kind, 0) + count
    return totals
