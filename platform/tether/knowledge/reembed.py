"""A tenant's knowledge chunks given the vectors of its current embedding model (the
knowledge half of a re-embed run, decision 0079). Resumable by construction: a batch is
committed with the model that made its vectors, so a restarted run skips it. Each batch
marks its documents and bases changed, so in-process views are rebuilt with the new
vectors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tether.core.ids import TenantId
from tether.core.tenant_sessions import BatchGuard, tenant_session, tenant_transaction
from tether.knowledge.chunking import Passage
from tether.knowledge.indexing import passage_text
from tether.knowledge.repositories import ChunkVectorRepository, KnowledgeBaseRepository
from tether.providers.base import EmbeddingProvider

Report = Callable[[int], Awaitable[None]]


async def count_stale_chunks(
    sessions: async_sessionmaker[AsyncSession], tenant_id: TenantId, model: str
) -> int:
    """The tenant's chunks whose vector ``model`` did not make."""
    async with tenant_session(sessions, tenant_id) as session:
        return await ChunkVectorRepository(session, tenant_id).count_stale(model)


async def reembed_chunks(
    sessions: async_sessionmaker[AsyncSession],
    tenant_id: TenantId,
    embedder: EmbeddingProvider,
    report: Report,
    *,
    batch: int = 128,
    guard: BatchGuard | None = None,
) -> int:
    """Re-embed the tenant's chunks ``batch`` per transaction; how many were. A provider
    failure propagates (the run fails, and resumes where it stood when run again).
    ``guard`` vets each batch before it writes."""
    after, done = None, 0
    while True:
        async with tenant_transaction(sessions, tenant_id) as session:
            chunks = ChunkVectorRepository(session, tenant_id)
            rows = await chunks.stale(embedder.name, after, batch)
            if not rows:
                return done
            texts = [passage_text(Passage(r.text, None, r.section)) for r in rows]
            vectors = await embedder.embed(texts)
            if guard is not None:
                await guard(session)
            for row, vector in zip(rows, vectors, strict=True):
                await chunks.set_vector(row.id, vector, embedder.name)
            await chunks.mark_reembedded(sorted({r.document_id for r in rows}))
            bases = KnowledgeBaseRepository(session, tenant_id)
            for base_id in sorted({r.knowledge_base_id for r in rows}):
                await bases.bump(base_id)
        after, done = rows[-1].id, done + len(rows)
        await report(done)
