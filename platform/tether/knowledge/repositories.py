"""Every SQL statement of knowledge bases, each repository scoped to one tenant."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Update, delete, func, insert, select, update

from tenancy.scoped import TenantScopedRepository
from tether.knowledge.models import KnowledgeBase, KnowledgeChunk, KnowledgeDocument
from tether.knowledge.schemas import DocumentStatus


class SearchableDocument(NamedTuple):
    id: uuid.UUID
    indexed_at: datetime
    filename: str


class ChunkRow(NamedTuple):
    """A chunk as the index cache reads it: ``tokens`` joined by spaces (4x faster to
    read than the array), ``vector`` in pgvector's binary form."""

    document_id: uuid.UUID
    id: uuid.UUID
    page: int | None
    section: str | None
    text: str
    tokens: str
    embedding_model: str | None
    vector: bytes | None


class KnowledgeBaseRepository(TenantScopedRepository[KnowledgeBase]):
    model = KnowledgeBase

    async def lock(self, base_id: uuid.UUID) -> KnowledgeBase | None:
        statement = self._select().where(KnowledgeBase.id == base_id).with_for_update()
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def default(self) -> KnowledgeBase | None:
        statement = self._select().where(KnowledgeBase.is_default.is_(True))
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def clear_default(self) -> None:
        statement = (
            update(KnowledgeBase)
            .where(KnowledgeBase.tenant_id == self._tenant_id, KnowledgeBase.is_default.is_(True))
            .values(is_default=False, updated_at=func.now())
        )
        await self._session.execute(statement)

    async def serving(self, persona_id: uuid.UUID) -> uuid.UUID | None:
        """The base a persona's relationships use: its own, else the tenant default."""
        bound = KnowledgeBase.creator_persona_id == persona_id
        statement = (
            select(KnowledgeBase.id)
            .where(KnowledgeBase.tenant_id == self._tenant_id, bound | KnowledgeBase.is_default)
            # A bound base is never the default: false sorts first, so its own wins.
            .order_by(KnowledgeBase.is_default)
            .limit(1)
        )
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def serves(self, base_id: uuid.UUID, persona_id: uuid.UUID) -> bool:
        """Whether the base may serve a relationship of the persona: it is bound to that
        persona or to none (a base the tenant shares); never another persona's."""
        bound = KnowledgeBase.creator_persona_id
        statement = select(KnowledgeBase.id).where(
            KnowledgeBase.tenant_id == self._tenant_id,
            KnowledgeBase.id == base_id,
            bound.is_(None) | (bound == persona_id),
        )
        return (await self._session.execute(statement)).scalar_one_or_none() is not None

    async def bump(self, base_id: uuid.UUID) -> None:
        """What retrieval sees changed: in-process indexes of the base are stale now."""
        statement = (
            update(KnowledgeBase)
            .where(KnowledgeBase.tenant_id == self._tenant_id, KnowledgeBase.id == base_id)
            .values(content_version=KnowledgeBase.content_version + 1)
        )
        await self._session.execute(statement)

    async def touch(self, base_id: uuid.UUID) -> None:
        statement = (
            update(KnowledgeBase)
            .where(KnowledgeBase.tenant_id == self._tenant_id, KnowledgeBase.id == base_id)
            .values(updated_at=func.now())
        )
        await self._session.execute(statement)

    async def version(self, base_id: uuid.UUID) -> int | None:
        statement = select(KnowledgeBase.content_version).where(
            KnowledgeBase.tenant_id == self._tenant_id, KnowledgeBase.id == base_id
        )
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def remove(self, base: KnowledgeBase) -> None:
        await self._session.delete(base)


class DocumentRepository(TenantScopedRepository[KnowledgeDocument]):
    model = KnowledgeDocument

    async def in_base(
        self, base_id: uuid.UUID, document_id: uuid.UUID, *, for_update: bool = False
    ) -> KnowledgeDocument | None:
        statement = self._select().where(
            KnowledgeDocument.knowledge_base_id == base_id, KnowledgeDocument.id == document_id
        )
        if for_update:
            statement = statement.with_for_update()
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def lock(self, document_id: uuid.UUID) -> KnowledgeDocument | None:
        statement = self._select().where(KnowledgeDocument.id == document_id).with_for_update()
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def lock_base(self, base_id: uuid.UUID) -> None:
        """Lock every document of the base, in id order. The indexer locks a document
        before it touches its base; deleting the base takes the same order (documents,
        then the base), or the two deadlock."""
        statement = (
            select(KnowledgeDocument.id)
            .where(
                KnowledgeDocument.tenant_id == self._tenant_id,
                KnowledgeDocument.knowledge_base_id == base_id,
            )
            .order_by(KnowledgeDocument.id)
            .with_for_update()
        )
        await self._session.execute(statement)

    async def by_sha256(self, base_id: uuid.UUID, sha256: str) -> KnowledgeDocument | None:
        statement = self._select().where(
            KnowledgeDocument.knowledge_base_id == base_id,
            KnowledgeDocument.sha256 == sha256,
            KnowledgeDocument.deleted_at.is_(None),
        )
        return (await self._session.execute(statement)).scalar_one_or_none()

    async def searchable(self, base_id: uuid.UUID) -> list[SearchableDocument]:
        """The base's documents whose chunks answer queries: indexed at least once and
        not deleted (a document being re-indexed keeps answering with its old chunks)."""
        statement = (
            select(KnowledgeDocument.id, KnowledgeDocument.indexed_at, KnowledgeDocument.filename)
            .where(
                KnowledgeDocument.tenant_id == self._tenant_id,
                KnowledgeDocument.knowledge_base_id == base_id,
                KnowledgeDocument.indexed_at.is_not(None),
                KnowledgeDocument.deleted_at.is_(None),
            )
            .order_by(KnowledgeDocument.id)
        )
        rows = await self._session.execute(statement)
        return [SearchableDocument(r[0], r[1], r[2]) for r in rows]

    def _update_of(self, document_id: uuid.UUID, generation: int, status: DocumentStatus) -> Update:
        """An UPDATE of the document, only while ``generation`` is its current one and it
        is ``status`` (so a run or send of an older generation changes nothing)."""
        return update(KnowledgeDocument).where(
            KnowledgeDocument.tenant_id == self._tenant_id,
            KnowledgeDocument.id == document_id,
            KnowledgeDocument.generation == generation,
            KnowledgeDocument.status == status.value,
        )

    async def mark_unqueued(self, document_id: uuid.UUID, generation: int) -> None:
        """Record that ``generation``'s indexing task never reached the queue, unless the
        document moved on (indexed, reindexed or deleted) meanwhile."""
        statement = self._update_of(document_id, generation, DocumentStatus.UPLOADED)
        await self._session.execute(
            statement.where(KnowledgeDocument.deleted_at.is_(None)).values(unqueued=True)
        )

    async def set_progress(self, document_id: uuid.UUID, generation: int, progress: float) -> None:
        statement = self._update_of(document_id, generation, DocumentStatus.INDEXING)
        await self._session.execute(statement.values(progress=progress, updated_at=func.now()))


# Chunks per INSERT (a few hundred milliseconds each).
CHUNK_INSERT_PAGE = 2_000


class ChunkRepository(TenantScopedRepository[KnowledgeChunk]):
    model = KnowledgeChunk

    async def replace(self, document_id: uuid.UUID, rows: Sequence[dict[str, Any]]) -> None:
        """The document's chunks become ``rows`` (in this transaction), inserted in pages:
        the statement timeout bounds each statement, and the largest upload makes about
        35,000 chunks, which as one statement took about as long as the timeout."""
        await self.remove(document_id)
        for start in range(0, len(rows), CHUNK_INSERT_PAGE):
            page = rows[start : start + CHUNK_INSERT_PAGE]
            values = [{**row, "tenant_id": self._tenant_id} for row in page]
            await self._session.execute(insert(KnowledgeChunk), values)

    async def remove(self, document_id: uuid.UUID) -> None:
        statement = delete(KnowledgeChunk).where(
            KnowledgeChunk.tenant_id == self._tenant_id, KnowledgeChunk.document_id == document_id
        )
        await self._session.execute(statement)

    async def of_documents(self, document_ids: Sequence[uuid.UUID]) -> list[ChunkRow]:
        """The chunks of these documents, each document's in order."""
        statement = (
            select(
                KnowledgeChunk.document_id,
                KnowledgeChunk.id,
                KnowledgeChunk.page,
                KnowledgeChunk.section,
                KnowledgeChunk.text,
                func.array_to_string(KnowledgeChunk.tokens, " "),
                KnowledgeChunk.embedding_model,
                func.vector_send(KnowledgeChunk.embedding),
            )
            .where(
                KnowledgeChunk.tenant_id == self._tenant_id,
                KnowledgeChunk.document_id.in_(document_ids),
            )
            .order_by(KnowledgeChunk.document_id, KnowledgeChunk.ordinal)
        )
        return [ChunkRow(*row) for row in await self._session.execute(statement)]


class StaleChunk(NamedTuple):
    id: uuid.UUID
    knowledge_base_id: uuid.UUID
    document_id: uuid.UUID
    section: str | None
    text: str


class ChunkVectorRepository(TenantScopedRepository[KnowledgeChunk]):
    """The statements of a tenant's re-embed (decision 0079): chunks whose vector another
    model made (or none), found by keyset and given the new model's."""

    model = KnowledgeChunk

    def _stale(self, model: str) -> list[Any]:
        return [
            KnowledgeChunk.tenant_id == self._tenant_id,
            KnowledgeChunk.embedding_model.is_distinct_from(model)
            | KnowledgeChunk.embedding.is_(None),
        ]

    async def count_stale(self, model: str) -> int:
        statement = select(func.count()).select_from(KnowledgeChunk).where(*self._stale(model))
        return int((await self._session.execute(statement)).scalar_one())

    async def stale(self, model: str, after: uuid.UUID | None, limit: int) -> list[StaleChunk]:
        statement = (
            select(
                KnowledgeChunk.id,
                KnowledgeChunk.knowledge_base_id,
                KnowledgeChunk.document_id,
                KnowledgeChunk.section,
                KnowledgeChunk.text,
            )
            .where(*self._stale(model))
            .order_by(KnowledgeChunk.id)
            .limit(limit)
        )
        if after is not None:  # keyset: never revisits a chunk in this run
            statement = statement.where(KnowledgeChunk.id > after)
        return [StaleChunk(*row) for row in await self._session.execute(statement)]

    async def set_vector(self, chunk_id: uuid.UUID, vector: Any, model: str) -> None:
        statement = (
            update(KnowledgeChunk)
            .where(KnowledgeChunk.tenant_id == self._tenant_id, KnowledgeChunk.id == chunk_id)
            .values(embedding=vector, embedding_model=model)
        )
        await self._session.execute(statement)

    async def mark_reembedded(self, document_ids: Sequence[uuid.UUID]) -> None:
        """The documents' in-process views are stale (they are keyed by ``indexed_at``),
        and their count of embedded chunks is recounted."""
        embedded = (
            select(func.count())
            .where(
                KnowledgeChunk.document_id == KnowledgeDocument.id,
                KnowledgeChunk.embedding.is_not(None),
            )
            .scalar_subquery()
        )
        statement = (
            update(KnowledgeDocument)
            .where(
                KnowledgeDocument.tenant_id == self._tenant_id,
                KnowledgeDocument.id.in_(document_ids),
                KnowledgeDocument.indexed_at.is_not(None),
            )
            .values(indexed_at=func.now(), embedded_chunks=embedded)
        )
        await self._session.execute(statement)
