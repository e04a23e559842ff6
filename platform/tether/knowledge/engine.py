"""The retrieval-engine interface: ingest a document, query a base with a deadline.

The built-in engine (``builtin.py``) is ours; another (a hosted RAG service, a vector
database) plugs in by implementing these two methods.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Protocol

from tether.core.ids import TenantId
from tether.recall.schemas import ExplanationRead

KNOWLEDGE_TIMEOUT = "knowledge_timeout"
KNOWLEDGE_UNAVAILABLE = "knowledge_unavailable"


@dataclass(frozen=True, slots=True)
class KnowledgeHit:
    """One passage, where it comes from, and why it ranked where it did.

    ``source`` is the label to cite: ``manual.pdf#page=12``, ``guide.md#Setup`` or
    ``notes.txt``.
    """

    id: uuid.UUID
    document_id: uuid.UUID
    text: str
    source: str
    filename: str
    page: int | None
    section: str | None
    score: float
    explanation: ExplanationRead


@dataclass(slots=True)
class KnowledgeResult:
    """Ranked passages, best first. ``degraded`` says what was skipped:
    ``knowledge_timeout`` (the deadline passed: no passages), ``knowledge_unavailable``
    (no base applies), ``embedding`` (ranked lexically only)."""

    knowledge_base_id: uuid.UUID | None
    hits: list[KnowledgeHit] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class IngestReport:
    """``status``: ready, failed, skipped (nothing to do) or superseded (the document
    was deleted or re-queued meanwhile; a newer run owns it)."""

    status: str
    chunks: int = 0
    pages: int | None = None
    error: str | None = None


class RagEngine(Protocol):
    async def ingest(self, tenant_id: TenantId, document_id: uuid.UUID) -> IngestReport:
        """Turn an uploaded document into searchable passages (runs in a worker)."""
        ...

    async def query(
        self,
        tenant_id: TenantId,
        knowledge_base_id: uuid.UUID,
        query: str,
        top_k: int,
        timeout_ms: int | None,
    ) -> KnowledgeResult:
        """The ``top_k`` best passages of the base. Past ``timeout_ms`` it answers at
        once with no passages and ``knowledge_timeout``; it never raises for that."""
        ...
