"""Documents of a knowledge base: upload (checked and stored, indexed by a worker), list,
read, delete (its chunks go at once) and reindex."""

from __future__ import annotations

import hashlib
import logging
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

import anyio.to_thread
from litestar.datastructures import UploadFile
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.access.principal import Principal
from tenancy.limits.quotas import Quotas
from tenancy.limits.values import LimitName
from tether.core.ids import TenantId, new_id
from tether.core.pagination import decode_cursor, next_cursor
from tether.core.settings import FilesSettings, KnowledgeSettings
from tether.core.tasks import QueueUnavailable, TaskQueue
from tether.core.tenant_sessions import tenant_transaction
from tether.core.unit_of_work import on_commit
from tether.knowledge import schemas as s
from tether.knowledge.errors import (
    DocumentNotFound,
    DocumentTooLarge,
    EmptyDocument,
    TooManyPages,
)
from tether.knowledge.file_stores import Files
from tether.knowledge.models import KnowledgeDocument
from tether.knowledge.parsing import MEDIA_TYPES, Kind, count_pdf_pages, decode_text, detect
from tether.knowledge.repositories import (
    ChunkRepository,
    DocumentRepository,
    KnowledgeBaseRepository,
)
from tether.knowledge.schemas import DocumentStatus
from tether.knowledge.services import KnowledgeBaseService
from tether.knowledge.usage import stored_knowledge_bytes

log = logging.getLogger(__name__)

INDEX_TASK = "knowledge.index_document"
KNOWLEDGE_BYTES = LimitName.KNOWLEDGE_BYTES
_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f]")


def read_document(d: KnowledgeDocument) -> s.DocumentRead:
    return s.DocumentRead(
        id=d.id,
        knowledge_base_id=d.knowledge_base_id,
        filename=d.filename,
        kind=d.kind,
        media_type=d.media_type,
        size_bytes=d.size_bytes,
        sha256=d.sha256,
        page_count=d.page_count,
        status=DocumentStatus(d.status),
        error=d.error,
        progress=d.progress,
        chunk_count=d.chunk_count,
        embedded_chunks=d.embedded_chunks,
        created_at=d.created_at,
        updated_at=d.updated_at,
        indexed_at=d.indexed_at,
    )


def clean_filename(raw: str | None) -> str:
    """The last path segment, without control characters, at most 255 characters."""
    name = _UNSAFE_NAME.sub("", (raw or "").replace("\\", "/").rsplit("/", 1)[-1]).strip()
    return name[-255:] or "document"


@dataclass(frozen=True, slots=True)
class Inspected:
    kind: Kind
    page_count: int | None
    sha256: str


def inspect(filename: str, data: bytes, limits: KnowledgeSettings) -> Inspected:
    """What the upload is, checked against the limits before anything is stored
    (blocking: run it in a thread)."""
    if len(data) > limits.max_upload_bytes:
        raise DocumentTooLarge(
            f"the file has {len(data)} bytes; at most {limits.max_upload_bytes} are accepted"
        )
    kind = detect(filename, data)
    page_count = None
    if kind is Kind.PDF:
        page_count = count_pdf_pages(data)
        if page_count is not None and page_count > limits.max_pdf_pages:
            raise TooManyPages(
                f"the PDF has {page_count} pages; at most {limits.max_pdf_pages} are accepted",
                errors=[{"field": "file", "message": f"more than {limits.max_pdf_pages} pages"}],
            )
    elif not (decode_text(data) or "").strip():
        raise EmptyDocument(
            "the file holds no text", errors=[{"field": "file", "message": "empty"}]
        )
    return Inspected(kind, page_count, hashlib.sha256(data).hexdigest())


class DocumentService:
    def __init__(
        self,
        session: AsyncSession,
        principal: Principal,
        bases: KnowledgeBaseService,
        tasks: TaskQueue,
        limits: KnowledgeSettings,
        sessions: async_sessionmaker[AsyncSession],
        quotas: Quotas,
        files: FilesSettings | None = None,
    ) -> None:
        """``sessions``: for what is written after the request's transaction committed;
        ``files``: where uploaded bytes go (unset: Postgres)."""
        tenant = principal.tenant_id
        self._session = session
        self._sessions = sessions
        self._principal = principal
        self._bases = bases
        self._tasks = tasks
        self._limits = limits
        self._quotas = quotas
        self._documents = DocumentRepository(session, tenant)
        self._chunks = ChunkRepository(session, tenant)
        self._base_rows = KnowledgeBaseRepository(session, tenant)
        self._files = Files(session, sessions, tenant, files or FilesSettings())

    async def upload(self, base_id: uuid.UUID, upload: UploadFile) -> tuple[s.DocumentRead, bool]:
        """Store the file and queue its indexing; the same bytes uploaded again answer
        with the existing document (``False``: nothing new was created)."""
        base = await self._bases.require(base_id, write=True)
        filename = clean_filename(upload.filename)
        data = await upload.read()
        found = await anyio.to_thread.run_sync(inspect, filename, data, self._limits)
        existing = await self._documents.by_sha256(base.id, found.sha256)
        if existing is not None:
            return read_document(existing), False
        tenant = self._principal.tenant_id
        recount = partial(stored_knowledge_bytes, self._session, tenant)
        async with self._quotas.hold(tenant, KNOWLEDGE_BYTES, len(data), recount) as held:
            document, created = await self._store_new(base.id, filename, data, found)
            held.settle(len(data) if created else 0)
        if created:
            await self._audited("document.upload", base.id, document.id, bytes=len(data))
        return read_document(document), created

    async def _store_new(
        self, base_id: uuid.UUID, filename: str, data: bytes, found: Inspected
    ) -> tuple[KnowledgeDocument, bool]:
        document_id = new_id()
        try:
            async with self._session.begin_nested():
                document = await self._documents.add(
                    id=document_id,
                    knowledge_base_id=base_id,
                    filename=filename,
                    kind=found.kind.value,
                    media_type=MEDIA_TYPES[found.kind],
                    size_bytes=len(data),
                    sha256=found.sha256,
                    page_count=found.page_count,
                    storage_key="pending",
                    status=DocumentStatus.UPLOADED.value,
                    uploaded_by_key_id=self._principal.key_id,
                )
        except IntegrityError:  # the same file, uploaded concurrently
            raced = await self._documents.by_sha256(base_id, found.sha256)
            if raced is None:
                raise
            return raced, False
        # In the same transaction: the document and its bytes commit, or neither does
        # (an object store is written before the commit; see decision 0083).
        document.storage_key = await self._files.write(base_id, document.id, data)
        await self._session.flush()
        await self._session.refresh(document)
        self._index_after_commit(document.id, document.generation)
        return document, True

    def _index_after_commit(self, document_id: uuid.UUID, generation: int) -> None:
        tenant = self._principal.tenant_id
        args = [str(tenant), str(document_id)]

        async def send() -> None:
            try:
                await self._tasks.send(INDEX_TASK, args)
            except QueueUnavailable as exc:
                # The document stays "uploaded"; marked, the next stalled-document
                # sweep queues it (tether.knowledge.stalled).
                log.warning("indexing of document %s not queued: %s", document_id, exc)
                await self._mark_unqueued(tenant, document_id, generation)

        on_commit(self._session, send)

    async def _mark_unqueued(
        self, tenant: TenantId, document_id: uuid.UUID, generation: int
    ) -> None:
        try:
            async with tenant_transaction(self._sessions, tenant) as session:
                await DocumentRepository(session, tenant).mark_unqueued(document_id, generation)
        except (SQLAlchemyError, OSError) as exc:
            # Then the sweep finds it once it has waited stalled_after_seconds.
            log.warning("document %s not marked unqueued: %s", document_id, exc)

    async def _require(
        self, base_id: uuid.UUID, document_id: uuid.UUID, *, write: bool = False
    ) -> KnowledgeDocument:
        await self._bases.require(base_id, write=write)
        document = await self._documents.in_base(base_id, document_id, for_update=write)
        if document is None:
            raise DocumentNotFound(f"no document {document_id} in knowledge base {base_id}")
        return document

    async def list(
        self,
        base_id: uuid.UUID,
        status: DocumentStatus | None,
        cursor: str | None,
        limit: int,
    ) -> s.DocumentPage:
        await self._bases.require(base_id)
        criteria = [KnowledgeDocument.knowledge_base_id == base_id]
        if status is None:
            criteria.append(KnowledgeDocument.deleted_at.is_(None))
        else:
            criteria.append(KnowledgeDocument.status == status.value)
        rows = await self._documents.page(decode_cursor(cursor), limit, *criteria)
        return s.DocumentPage([read_document(r) for r in rows], next_cursor(rows, limit))

    async def get(self, base_id: uuid.UUID, document_id: uuid.UUID) -> s.DocumentRead:
        return read_document(await self._require(base_id, document_id))

    async def delete(self, base_id: uuid.UUID, document_id: uuid.UUID) -> None:
        """Chunks and vectors go in this transaction; queries stop returning the
        document as soon as it commits. Deleting twice is not an error."""
        document = await self._require(base_id, document_id, write=True)
        if document.deleted_at is not None:
            return
        now = datetime.now(UTC)
        was_searchable = document.indexed_at is not None
        document.status = DocumentStatus.DELETED.value
        document.deleted_at = now
        document.updated_at = now
        document.generation += 1  # an indexing run in flight must not commit
        document.chunk_count = document.embedded_chunks = 0
        await self._chunks.remove(document.id)
        if was_searchable:
            await self._base_rows.bump(base_id)
        await self._audited("document.delete", base_id, document.id)
        await self._files.remove(document.storage_key, document.id)

    async def _audited(
        self, action: str, base_id: uuid.UUID, document_id: uuid.UUID, **detail: object
    ) -> None:
        await self._bases.audited(action, base_id, document_id=str(document_id), **detail)

    async def reindex(self, base_id: uuid.UUID, document_id: uuid.UUID) -> s.DocumentRead:
        """Index again (after a failure, a lost queue message or a new embedding model).
        The current chunks keep answering queries until the new ones replace them."""
        document = await self._require(base_id, document_id, write=True)
        if document.deleted_at is not None:
            raise DocumentNotFound(f"document {document_id} was deleted")
        document.status = DocumentStatus.UPLOADED.value
        document.generation += 1
        document.requeues = 0
        document.unqueued = False
        document.error = None
        document.progress = 0.0
        document.updated_at = datetime.now(UTC)
        await self._session.flush()
        await self._audited("document.reindex", base_id, document.id)
        self._index_after_commit(document.id, document.generation)
        return read_document(document)
