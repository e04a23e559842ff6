"""Indexing one document (in a worker): read the stored file, split it into passages,
compute tokens and vectors, and replace the document's chunks in one transaction.

Idempotent and race-safe: a run claims the document's current ``generation`` and
commits only if it is still current and the document was not deleted, so a redelivered
task, a reindex request or a delete during the run never leave mixed chunks behind.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tether.core.ids import TenantId, new_id
from tether.core.settings import FilesSettings, KnowledgeSettings
from tether.core.tenant_sessions import tenant_transaction
from tether.knowledge.chunking import Passage, chunk_blocks
from tether.knowledge.engine import IngestReport
from tether.knowledge.errors import DocumentUnreadable, FileStoreUnavailable, StoredFileMissing
from tether.knowledge.file_stores import Files
from tether.knowledge.models import KnowledgeDocument
from tether.knowledge.parsing import Block, Kind, read, with_text
from tether.knowledge.repositories import (
    ChunkRepository,
    DocumentRepository,
    KnowledgeBaseRepository,
)
from tether.knowledge.schemas import DocumentStatus
from tether.privacy.tenant_filters import TenantFilters
from tether.providers.base import EmbeddingProvider, ProviderError
from tether.recall.text import tokenize

log = logging.getLogger(__name__)

EMBED_BATCH = 128
PROGRESS_EVERY_SECONDS = 1.0
# Reading pages is the first half of the progress bar, embedding the second.
_READ_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class _Claim:
    generation: int
    kind: Kind
    size_bytes: int
    storage_key: str


def passage_text(passage: Passage) -> str:
    """What is tokenized and embedded: the section heading belongs to its passage."""
    return f"{passage.section}\n{passage.text}" if passage.section else passage.text


class DocumentIndexer:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        tenant_id: TenantId,
        embedder: EmbeddingProvider,
        limits: KnowledgeSettings,
        files: FilesSettings | None = None,
    ) -> None:
        self._sessions = sessions
        self._files = files or FilesSettings()
        self._tenant_id = tenant_id
        self._embedder = embedder
        self._limits = limits
        self._reported = 0.0

    async def run(self, document_id: uuid.UUID) -> IngestReport:
        """Index the document if it waits for indexing; see the module docstring."""
        claim = await self._claim(document_id)
        if claim is None:
            return IngestReport("skipped")
        try:
            blocks = await self._read(document_id, claim)
        except DocumentUnreadable as exc:
            return await self.fail(document_id, str(exc), claim.generation)
        blocks = await self._masked(blocks)
        pages = len(blocks) if claim.kind is Kind.PDF else None
        passages = chunk_blocks(blocks, self._limits.chunk_chars, self._limits.chunk_overlap_chars)
        texts = [passage_text(p) for p in passages]
        tokens = [tokenize(t) for t in texts]
        vectors = await self._embed(document_id, claim.generation, texts)
        return await self._commit(document_id, claim, passages, tokens, vectors, pages)

    async def _claim(self, document_id: uuid.UUID) -> _Claim | None:
        async with tenant_transaction(self._sessions, self._tenant_id) as session:
            document = await DocumentRepository(session, self._tenant_id).lock(document_id)
            waiting = (DocumentStatus.UPLOADED.value, DocumentStatus.INDEXING.value)
            if (
                document is None
                or document.deleted_at is not None
                or document.status not in waiting
            ):
                return None
            document.status = DocumentStatus.INDEXING.value
            document.progress = 0.0
            document.updated_at = datetime.now(UTC)
            return _Claim(
                document.generation, Kind(document.kind), document.size_bytes, document.storage_key
            )

    async def _read(self, document_id: uuid.UUID, claim: _Claim) -> list[Block]:
        data = await self._file(document_id, claim)
        reading = read(claim.kind, data, self._limits.max_pdf_pages)
        blocks = []
        for number, block in enumerate(reading.blocks, start=1):
            blocks.append(block)
            await self._progress(
                document_id, claim.generation, _READ_SHARE * number / reading.pages
            )
        return with_text(claim.kind, blocks)

    async def _file(self, document_id: uuid.UUID, claim: _Claim) -> bytes:
        """The stored file, slice by slice (the parser needs it whole, and it is at most
        ``max_upload_bytes``). A missing or short file, or a file store that does not
        answer, fails the document with a reason the uploader can act on; the statement
        timeout, or the store's timeouts and bounded attempts, bound every read."""
        size_bytes = claim.size_bytes
        buffer = bytearray()
        try:
            async with tenant_transaction(self._sessions, self._tenant_id) as session:
                files = Files(session, self._sessions, self._tenant_id, self._files)
                async for piece in files.stream(claim.storage_key, document_id):
                    buffer += piece
        except StoredFileMissing:
            buffer.clear()
        except FileStoreUnavailable as exc:
            raise DocumentUnreadable(f"{exc}; reindex the document to retry") from exc
        except LookupError as exc:
            raise DocumentUnreadable(f"{exc}; upload it again") from exc
        if not buffer:
            raise DocumentUnreadable("the uploaded file is missing; upload it again")
        if len(buffer) != size_bytes:
            raise DocumentUnreadable(
                f"the stored file has {len(buffer)} of its {size_bytes} bytes; upload it again"
            )
        return bytes(buffer)

    async def _masked(self, blocks: list[Block]) -> list[Block]:
        """The blocks through the tenant's privacy filter, where the tenant turned it on
        for documents: chunks, their tokens and vectors then never hold the raw values."""
        async with tenant_transaction(self._sessions, self._tenant_id) as session:
            privacy = await TenantFilters(0).for_documents(session, self._tenant_id)
        if privacy is None:
            return blocks
        return [
            Block(
                privacy.mask(b.text).text,
                b.page,
                None if b.section is None else privacy.mask(b.section).text,
            )
            for b in blocks
        ]

    async def _progress(self, document_id: uuid.UUID, generation: int, value: float) -> None:
        now = time.monotonic()
        if now - self._reported < PROGRESS_EVERY_SECONDS:
            return
        self._reported = now
        async with tenant_transaction(self._sessions, self._tenant_id) as session:
            await DocumentRepository(session, self._tenant_id).set_progress(
                document_id, generation, round(value, 3)
            )

    async def _embed(
        self, document_id: uuid.UUID, generation: int, texts: Sequence[str]
    ) -> list[npt.NDArray[np.float32] | None]:
        """A vector per text; None for all from the first failed batch on (the chunks
        are still searchable lexically, and a reindex fills the vectors in)."""
        vectors: list[npt.NDArray[np.float32] | None] = []
        for start in range(0, len(texts), EMBED_BATCH):
            try:
                batch = await self._embedder.embed(texts[start : start + EMBED_BATCH])
            except ProviderError as exc:
                log.warning("document %s indexed without some vectors: %s", document_id, exc)
                return vectors + [None] * (len(texts) - len(vectors))
            vectors.extend(batch)
            done = _READ_SHARE + (1 - _READ_SHARE) * len(vectors) / len(texts)
            await self._progress(document_id, generation, min(done, 0.99))
        return vectors

    async def _commit(
        self,
        document_id: uuid.UUID,
        claim: _Claim,
        passages: Sequence[Passage],
        tokens: Sequence[list[str]],
        vectors: Sequence[npt.NDArray[np.float32] | None],
        pages: int | None,
    ) -> IngestReport:
        async with tenant_transaction(self._sessions, self._tenant_id) as session:
            document = await self._current(session, document_id, claim.generation)
            if document is None:
                return IngestReport("superseded")
            rows = [
                {
                    "id": new_id(),
                    "knowledge_base_id": document.knowledge_base_id,
                    "document_id": document.id,
                    "ordinal": ordinal,
                    "page": passage.page,
                    "section": passage.section,
                    "text": passage.text,
                    "tokens": passage_tokens,
                    "embedding": vector,
                    "embedding_model": None if vector is None else self._embedder.name,
                }
                for ordinal, (passage, passage_tokens, vector) in enumerate(
                    zip(passages, tokens, vectors, strict=True)
                )
            ]
            await ChunkRepository(session, self._tenant_id).replace(document.id, rows)
            now = datetime.now(UTC)
            document.status = DocumentStatus.READY.value
            document.error = None
            document.progress = 1.0
            document.chunk_count = len(rows)
            document.embedded_chunks = sum(1 for v in vectors if v is not None)
            document.page_count = pages if pages is not None else document.page_count
            document.indexed_at = now
            document.updated_at = now
            await KnowledgeBaseRepository(session, self._tenant_id).bump(document.knowledge_base_id)
        return IngestReport("ready", chunks=len(rows), pages=pages)

    async def _current(
        self, session: AsyncSession, document_id: uuid.UUID, generation: int | None
    ) -> KnowledgeDocument | None:
        """The document, locked, if this run still owns it."""
        document = await DocumentRepository(session, self._tenant_id).lock(document_id)
        if document is None or document.deleted_at is not None:
            return None
        if generation is None:
            # An unexpected failure: only a run still in progress is affected.
            return document if document.status == DocumentStatus.INDEXING.value else None
        return document if document.generation == generation else None

    async def fail(
        self, document_id: uuid.UUID, error: str, generation: int | None = None
    ) -> IngestReport:
        """Mark the document failed with ``error`` (shown to the uploader); its old
        chunks, if any, stop answering. ``generation`` None: whatever run is current."""
        async with tenant_transaction(self._sessions, self._tenant_id) as session:
            document = await self._current(session, document_id, generation)
            if document is None:
                return IngestReport("superseded")
            if document.indexed_at is not None:
                await ChunkRepository(session, self._tenant_id).remove(document.id)
                await KnowledgeBaseRepository(session, self._tenant_id).bump(
                    document.knowledge_base_id
                )
            document.status = DocumentStatus.FAILED.value
            document.error = error
            document.progress = 0.0
            document.chunk_count = 0
            document.embedded_chunks = 0
            document.indexed_at = None
            document.updated_at = datetime.now(UTC)
        log.info("document %s failed to index: %s", document_id, error)
        return IngestReport("failed", error=error)
