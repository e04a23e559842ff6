"""API shapes of knowledge bases, documents and queries."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated

import msgspec
from litestar.datastructures import UploadFile

from tether.core.text import SHORT_TEXT_CHARS, Name, ShortText, text
from tether.recall.schemas import ExplanationRead

Description = ShortText
Query = Annotated[str, text(SHORT_TEXT_CHARS, min_length=1)]
TopK = Annotated[int, msgspec.Meta(ge=1, le=50)]
TimeoutMs = Annotated[int, msgspec.Meta(ge=1, le=60_000)]


class DocumentStatus(StrEnum):
    UPLOADED = "uploaded"
    INDEXING = "indexing"
    READY = "ready"
    FAILED = "failed"
    DELETED = "deleted"


class KnowledgeBaseCreate(msgspec.Struct, forbid_unknown_fields=True):
    name: Name
    description: Description = ""
    # Bound to a persona, the base serves every relationship of that persona.
    creator_persona_id: uuid.UUID | None = None
    # The tenant's fallback base. Unset: the tenant's first unbound base becomes it.
    is_default: bool | None = None


class KnowledgeBaseUpdate(msgspec.Struct, forbid_unknown_fields=True):
    name: Name | None = None
    description: Description | None = None
    is_default: bool | None = None


class KnowledgeBaseBinding(msgspec.Struct, forbid_unknown_fields=True):
    creator_persona_id: uuid.UUID


class KnowledgeBaseRead(msgspec.Struct):
    id: uuid.UUID
    name: str
    description: str
    creator_persona_id: uuid.UUID | None
    is_default: bool
    created_at: datetime
    updated_at: datetime


class KnowledgeBasePage(msgspec.Struct):
    items: list[KnowledgeBaseRead]
    next_cursor: str | None


@dataclass
class DocumentUpload:
    """The multipart form of an upload: one ``file`` part."""

    file: UploadFile


class DocumentRead(msgspec.Struct):
    id: uuid.UUID
    knowledge_base_id: uuid.UUID
    filename: str
    kind: str
    media_type: str
    size_bytes: int
    sha256: str
    page_count: int | None
    status: DocumentStatus
    error: str | None
    # 0..1 while indexing (pages read, then passages embedded); 1 when ready.
    progress: float
    chunk_count: int
    # Chunks with a vector; fewer than chunk_count when the embedder was down (reindex).
    embedded_chunks: int
    created_at: datetime
    updated_at: datetime
    indexed_at: datetime | None


class DocumentPage(msgspec.Struct):
    items: list[DocumentRead]
    next_cursor: str | None


class KnowledgeQuery(msgspec.Struct, forbid_unknown_fields=True):
    query: Query
    top_k: TopK | None = None
    # Unset: wait for the answer. Set: past it, answer empty with knowledge_timeout.
    timeout_ms: TimeoutMs | None = None


class SourceRead(msgspec.Struct):
    document_id: uuid.UUID
    filename: str
    page: int | None
    section: str | None
    # "manual.pdf#page=12", "guide.md#Setup" or "notes.txt".
    label: str


class ChunkHit(msgspec.Struct):
    id: uuid.UUID
    text: str
    source: SourceRead
    score: float
    explanation: ExplanationRead


class KnowledgeQueryResponse(msgspec.Struct):
    knowledge_base_id: uuid.UUID
    items: list[ChunkHit]
    degraded: list[str]
    timings_ms: dict[str, float]
