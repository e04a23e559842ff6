"""``tether reindex``: rebuild what was derived from memory text — tokens and vectors —
from Postgres, after a change of embedding model or dimension (or tokenizer).

Resumable by construction: a batch is committed with its vectors tagged with the model
that made them, so a restarted run skips everything already done. Partitions whose
memories changed are invalidated, so recall picks the new vectors up.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy import ColumnElement, func, or_, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.access.repositories import TenantRepository
from tenancy.ids import RelationshipId, RelationshipScope
from tether.core.database import transaction
from tether.core.ids import TenantId
from tether.core.tenant_sessions import BatchGuard, tenant_session, tenant_transaction
from tether.memories.writer import Invalidate
from tether.providers.base import EmbeddingProvider
from tether.recall.models import Memory
from tether.recall.text import tokenize


@dataclass(slots=True)
class Progress:
    done: int
    total: int
    started: float

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0


def _stale(embedder: EmbeddingProvider, everything: bool) -> list[ColumnElement[bool]]:
    if everything:
        return []
    return [
        or_(
            Memory.embedding.is_(None),
            Memory.embedding_model.is_distinct_from(embedder.name),
            Memory.embedding_dim.is_distinct_from(embedder.dimension),
        )
    ]


async def _tenants(sessions: async_sessionmaker[AsyncSession]) -> list[TenantId]:
    async with transaction(sessions) as session:
        return await TenantRepository(session).ids()


async def _count(
    sessions: async_sessionmaker[AsyncSession],
    tenant_id: TenantId,
    embedder: EmbeddingProvider,
    everything: bool,
) -> int:
    async with tenant_session(sessions, tenant_id) as session:
        statement = (
            select(func.count())
            .select_from(Memory)
            .where(Memory.deleted_at.is_(None), *_stale(embedder, everything))
        )
        return int((await session.execute(statement)).scalar_one())


async def count_stale(
    sessions: async_sessionmaker[AsyncSession], embedder: EmbeddingProvider, everything: bool
) -> int:
    """How many memories of every tenant the run would recompute."""
    return sum([await _count(sessions, t, embedder, everything) for t in await _tenants(sessions)])


async def _batch(
    session: AsyncSession,
    embedder: EmbeddingProvider,
    everything: bool,
    batch: int,
    after: tuple[uuid.UUID, uuid.UUID] | None,
    guard: BatchGuard | None = None,
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """Recompute the next ``batch`` memories after ``after``; their (relationship, id)."""
    statement = (
        select(Memory.relationship_id, Memory.id, Memory.content)
        .where(Memory.deleted_at.is_(None), *_stale(embedder, everything))
        .order_by(Memory.relationship_id, Memory.id)
        .limit(batch)
    )
    if after is not None:  # keyset: never revisits a row in this run
        statement = statement.where(tuple_(Memory.relationship_id, Memory.id) > after)
    rows = list(await session.execute(statement))
    if not rows:
        return []
    vectors = await embedder.embed([content for _, _, content in rows])
    if guard is not None:
        await guard(session)
    for (relationship_id, memory_id, content), vector in zip(rows, vectors, strict=True):
        await session.execute(
            update(Memory)
            .where(Memory.relationship_id == relationship_id, Memory.id == memory_id)
            .values(
                tokens=tokenize(content),
                embedding=vector,
                embedding_model=embedder.name,
                embedding_dim=embedder.dimension,
            )
        )
    return [(relationship_id, memory_id) for relationship_id, memory_id, _ in rows]


async def reindex(
    sessions: async_sessionmaker[AsyncSession],
    embedder: EmbeddingProvider,
    invalidate: Invalidate,
    *,
    batch: int = 256,
    everything: bool = False,
    report: Callable[[Progress], None] = lambda _: None,
    embedders: Callable[[TenantId], Awaitable[EmbeddingProvider]] | None = None,
) -> Progress:
    """Recompute tokens and vectors of every memory not made by ``embedder`` (or of all
    of them with ``everything``), one tenant after another (each under row-level
    security), ``batch`` rows per transaction. ``embedders``: each tenant's own model
    (decision 0077), so that a tenant on a named provider keeps its vectors."""

    async def model_of(tenant_id: TenantId) -> EmbeddingProvider:
        return embedder if embedders is None else await embedders(tenant_id)

    tenants = [(t, await model_of(t)) for t in await _tenants(sessions)]
    total = sum([await _count(sessions, t, chosen, everything) for t, chosen in tenants])
    progress = Progress(0, total, time.monotonic())

    async def each(current: Progress) -> None:
        report(current)

    for tenant_id, chosen in tenants:
        await reindex_tenant(
            sessions,
            tenant_id,
            chosen,
            invalidate,
            progress,
            batch=batch,
            everything=everything,
            report=each,
        )
    return progress


async def count_tenant(
    sessions: async_sessionmaker[AsyncSession], tenant_id: TenantId, embedder: EmbeddingProvider
) -> int:
    """How many memories of the tenant ``embedder`` did not make."""
    return await _count(sessions, tenant_id, embedder, False)


async def reindex_tenant(
    sessions: async_sessionmaker[AsyncSession],
    tenant_id: TenantId,
    embedder: EmbeddingProvider,
    invalidate: Invalidate,
    progress: Progress,
    *,
    batch: int = 256,
    everything: bool = False,
    report: Callable[[Progress], Awaitable[None]] | None = None,
    guard: BatchGuard | None = None,
) -> Progress:
    """:func:`reindex` for one tenant (a tenant's own re-embed run, decision 0079):
    ``progress.done`` grows by each committed batch, which ``report`` is told of;
    ``guard`` vets each batch before it writes."""
    after: tuple[uuid.UUID, uuid.UUID] | None = None
    while True:
        async with tenant_transaction(sessions, tenant_id) as session:
            done = await _batch(session, embedder, everything, batch, after, guard)
        if not done:
            return progress
        for relationship_id in {relationship_id for relationship_id, _ in done}:
            await invalidate(RelationshipScope(tenant_id, RelationshipId(relationship_id)))
        after = done[-1]
        progress.done += len(done)
        if report is not None:
            await report(progress)
