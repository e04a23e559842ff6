"""Knowledge bases, their documents and the documents' chunks.

Not partitioned: this content is scoped by tenant and base, not by relationship, and a
base is read whole into the process's index cache (see ``index_cache.py``), so the only
hot access path is "every chunk of these documents", which the btree on
``(document_id, ordinal)`` serves.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.orm import Mapped, mapped_column

from tether.core.database import Base, TenantOwned


def _now() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now())


class KnowledgeBase(TenantOwned, Base):
    """A set of documents. Bound to a persona, it serves every relationship of that
    persona; the tenant's ``is_default`` base serves personas without one.

    ``content_version`` grows whenever what retrieval sees changes (a document became
    ready, was re-indexed or deleted): in-process indexes are keyed by it.
    """

    __tablename__ = "knowledge_bases"
    __table_args__ = (
        Index(
            "uq_knowledge_bases_default",
            "tenant_id",
            unique=True,
            postgresql_where=text("is_default"),
        ),
        Index(
            "uq_knowledge_bases_persona",
            "tenant_id",
            "creator_persona_id",
            unique=True,
            postgresql_where=text("creator_persona_id IS NOT NULL"),
        ),
    )

    name: Mapped[str] = mapped_column(String(128))
    description: Mapped[str] = mapped_column(Text, server_default="")
    creator_persona_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("creator_personas.id", ondelete="SET NULL")
    )
    is_default: Mapped[bool] = mapped_column(Boolean, server_default="false")
    content_version: Mapped[int] = mapped_column(BigInteger, server_default="0")
    updated_at: Mapped[datetime] = _now()


class KnowledgeDocument(TenantOwned, Base):
    """One uploaded file: ``uploaded → indexing → ready | failed``, or ``deleted``.

    ``generation`` grows on every (re)index request; a worker only commits the chunks
    of the generation it started, so a superseded run can never overwrite a newer one.
    """

    __tablename__ = "knowledge_documents"
    __table_args__ = (
        Index(
            "uq_knowledge_documents_sha256",
            "knowledge_base_id",
            "sha256",
            unique=True,
            postgresql_where=text("deleted_at IS NULL"),
        ),
        Index("ix_knowledge_documents_base_status", "knowledge_base_id", "status"),
        Index("ix_knowledge_documents_unqueued", "updated_at", postgresql_where=text("unqueued")),
    )

    knowledge_base_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("knowledge_bases.id", ondelete="CASCADE")
    )
    filename: Mapped[str] = mapped_column(String(255))
    kind: Mapped[str] = mapped_column(String(16))
    media_type: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    page_count: Mapped[int | None] = mapped_column(Integer)
    storage_key: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text)
    progress: Mapped[float] = mapped_column(Float, server_default="0")
    chunk_count: Mapped[int] = mapped_column(Integer, server_default="0")
    embedded_chunks: Mapped[int] = mapped_column(Integer, server_default="0")
    generation: Mapped[int] = mapped_column(Integer, server_default="1")
    # Times the stalled-document sweep queued its indexing again since the last upload
    # or reindex (tether.knowledge.stalled).
    requeues: Mapped[int] = mapped_column(Integer, server_default="0")
    # Its indexing task never reached the queue (the broker was away when it was
    # uploaded or reindexed): the next sweep queues it (migration 0013).
    unqueued: Mapped[bool] = mapped_column(Boolean, server_default="false")
    uploaded_by_key_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    updated_at: Mapped[datetime] = _now()
    indexed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class KnowledgeChunk(TenantOwned, Base):
    """A passage of a document: bounded text, its BM25 tokens and its embedding.

    ``page`` is 1-based for PDFs (None otherwise); ``section`` is the nearest heading of
    a Markdown file. Tokens and vector are computed over the section and the text.
    """

    __tablename__ = "knowledge_chunks"
    __table_args__ = (
        Index("ix_knowledge_chunks_document", "document_id", "ordinal"),
        Index("ix_knowledge_chunks_base", "knowledge_base_id"),
    )

    knowledge_base_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("knowledge_bases.id", ondelete="CASCADE")
    )
    document_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("knowledge_documents.id", ondelete="CASCADE")
    )
    ordinal: Mapped[int] = mapped_column(Integer)
    page: Mapped[int | None] = mapped_column(Integer)
    section: Mapped[str | None] = mapped_column(String(256))
    text: Mapped[str] = mapped_column(Text)
    tokens: Mapped[list[str]] = mapped_column(ARRAY(Text))
    embedding: Mapped[Any | None] = mapped_column(Vector())
    embedding_model: Mapped[str | None] = mapped_column(String(64))


class KnowledgeFileChunk(Base):
    """A slice of an uploaded file's bytes (decision 0060): files live in Postgres, so
    every API and worker pod reads the same ones and no pod keeps file state. A file is
    its slices in ``seq`` order, each at most ``tether.knowledge.files.SLICE_BYTES``;
    they go with their document (cascade) and are deleted with it."""

    __tablename__ = "knowledge_file_chunks"

    tenant_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("tenants.id", ondelete="CASCADE")
    )
    document_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True),
        ForeignKey("knowledge_documents.id", ondelete="CASCADE"),
        primary_key=True,
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class FileDeletion(Base):
    """An object-store key (or a ``/``-ended prefix) to delete once the transaction that
    wrote this row commits (decision 0083): written with the document or base deletion,
    removed when the objects are gone. A hook deletes right after the commit; the sweep
    retries what a crash or an outage left. No foreign key: it outlives what it names."""

    __tablename__ = "file_deletions"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    key: Mapped[str] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _now()
    # An upload's guard waits this long for its transaction (decision 0083).
    not_before: Mapped[datetime] = _now()
