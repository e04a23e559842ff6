"""``tether reindex``: rebuild what was derived from memory text — tokens and vectors —
from Postgres, after a change of embedding model or dimension (or tokenizer).

Resumable by construction: a batch is committed with its vectors tagged with the model
that made them, so a restarted run skips everything already done. Partitions whose
memories changed are invalidated, so recall picks the new vectors up.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import ColumnElement, func, or_, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.ids import RelationshipId, RelationshipScope
from tether.core.database import transaction
from tether.core.ids import TenantId
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


async def count_stale(
    sessions: async_sessionmaker[AsyncSession], embedder: EmbeddingProvider, everything: bool
) -> int:
    async with sessions() as session:
        statement = (
            select(func.count())
            .select_from(Memory)
            .where(Memory.deleted_at.is_(None), *_stale(embedder, everything))
        )
        return int((await session.execute(statement)).scalar_one())


async def reindex(
    sessions: async_sessionmaker[AsyncSession],
    embedder: EmbeddingProvider,
    invalidate: Invalidate,
    *,
    batch: int = 256,
    everything: bool = False,
    report: Callable[[Progress], None] = lambda _: None,
) -> Progress:
    """Recompute tokens and vectors of every memory not made by ``embedder`` (or of all
    of them with ``everything``), ``batch`` rows per transaction."""
    progress = Progress(0, await count_stale(sessions, embedder, everything), time.monotonic())
    after: tuple[uuid.UUID, uuid.UUID] | None = None
    while True:
        touched: set[tuple[uuid.UUID, uuid.UUID]] = set()
        async with transaction(sessions) as session:
            statement = (
                select(Memory.relationship_id, Memory.id, Memory.tenant_id, Memory.content)
                .where(Memory.deleted_at.is_(None), *_stale(embedder, everything))
                .order_by(Memory.relationship_id, Memory.id)
                .limit(batch)
            )
            if after is not None:  # keyset: never revisits a row in this run
                statement = statement.where(tuple_(Memory.relationship_id, Memory.id) > after)
            rows = list(await session.execute(statement))
            if not rows:
                return progress
            vectors = await embedder.embed([content for _, _, _, content in rows])
            for (relationship_id, memory_id, tenant_id, content), vector in zip(
                rows, vectors, strict=True
            ):
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
                touched.add((tenant_id, relationship_id))
            after = (rows[-1][0], rows[-1][1])
        for tenant_id, relationship_id in touched:
            await invalidate(
                RelationshipScope(TenantId(tenant_id), RelationshipId(relationship_id))
            )
        progress.done += len(rows)
        report(progress)
