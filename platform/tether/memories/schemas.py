"""API shapes of memories, their history and the consolidation log."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from tether.core.text import Content, Identifier, items, text
from tether.memories.enums import MemoryLayer, MemoryType, Polarity

ExternalId = Identifier
Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
Reason = Annotated[str, text(500)]
# The sizes of the subject, predicate and object columns.
Subject = Annotated[str, text(128)]
Predicate = Annotated[str, text(64)]
Object = Annotated[str, text(256)]
# Who entered a memory through the API: staff (creators, support) or the user themself,
# through the gateway's own UI. The pipeline never replaces either (decision 0053).
ManualProvenance = Literal["staff_entered", "user_entered"]
# Past the configured limit (TETHER_MEMORY__MAX_BATCH_CREATE) a batch is refused whole.
MAX_BATCH_ITEMS = 1000


class MemoryCreate(msgspec.Struct, forbid_unknown_fields=True):
    content: Content
    memory_type: MemoryType = MemoryType.FACT
    layer: MemoryLayer = MemoryLayer.SEMANTIC
    external_id: ExternalId | None = None
    occurred_at: datetime | None = None
    importance: Unit = 0.5
    subject: Subject = ""
    predicate: Predicate = ""
    object: Object = ""
    polarity: Polarity = Polarity.AFFIRMED
    expires_at: datetime | None = None
    private_to_creator: bool = False
    # The conversation session the memory comes from (e.g. an imported chat log): its
    # memories are neighbours in recall, so a question finds the turns around a match.
    session_id: ExternalId | None = None
    provenance: ManualProvenance = "staff_entered"


class MemoryBatchCreate(msgspec.Struct, forbid_unknown_fields=True):
    memories: Annotated[list[MemoryCreate], items(MAX_BATCH_ITEMS)]


class MemoryUpdate(msgspec.Struct, forbid_unknown_fields=True):
    content: Content | None = None
    memory_type: MemoryType | None = None
    importance: Unit | None = None
    expires_at: datetime | None = None
    subject: Subject | None = None
    predicate: Predicate | None = None
    object: Object | None = None
    polarity: Polarity | None = None
    reason: Reason = ""
    # An edit is manual: the memory becomes staff_entered unless the user made it.
    provenance: ManualProvenance = "staff_entered"


class MemoryDeactivate(msgspec.Struct, forbid_unknown_fields=True):
    reason: Reason = ""


class MemoryRead(msgspec.Struct):
    id: uuid.UUID
    external_id: str | None
    memory_type: str
    layer: str
    subject: str
    predicate: str
    object: str
    polarity: str
    content: str
    importance: float
    confidence: float
    strength: float
    occurred_at: datetime
    valid_from: datetime | None
    expires_at: datetime | None
    is_active: bool
    superseded_by: uuid.UUID | None
    source_turn_ids: list[uuid.UUID]
    session_id: str | None
    private_to_creator: bool
    origin: str
    provenance: str
    version: int
    last_recalled_at: datetime | None
    created_at: datetime
    updated_at: datetime


class MemoryPage(msgspec.Struct):
    items: list[MemoryRead]
    next_cursor: str | None


class BatchItemResult(msgspec.Struct):
    index: int
    status: Literal["created", "exists"]
    id: uuid.UUID


class MemoryBatchResult(msgspec.Struct):
    results: list[BatchItemResult]
    degraded: list[str]


class MemoryVersionRead(msgspec.Struct):
    version: int
    change: str
    reason: str
    actor: str
    snapshot: dict[str, Any]
    created_at: datetime


class MemoryVersionPage(msgspec.Struct):
    items: list[MemoryVersionRead]
    next_cursor: str | None


class SourceTurn(msgspec.Struct):
    id: uuid.UUID
    session_id: str
    role: str
    text: str
    at: datetime


class MemorySources(msgspec.Struct):
    """Why a memory exists: the turns it was extracted from (empty for manual ones)."""

    memory_id: uuid.UUID
    origin: str
    turns: list[SourceTurn]


class ConsolidationRead(msgspec.Struct):
    id: uuid.UUID
    session_id: str | None
    outcome: str
    candidate: dict[str, Any]
    target_memory_id: uuid.UUID | None
    result_memory_id: uuid.UUID | None
    reason: str
    created_at: datetime


class ConsolidationPage(msgspec.Struct):
    items: list[ConsolidationRead]
    next_cursor: str | None


class MemoryResolve(msgspec.Struct, forbid_unknown_fields=True):
    reason: Reason = ""


class ConflictRead(msgspec.Struct):
    """An open conflict: a newer memory held back because the memory it would have
    replaced has stronger evidence (the context presents ``existing``)."""

    id: uuid.UUID  # the held memory's id
    held: MemoryRead
    existing: MemoryRead | None  # None: deleted since (resolving accepts ``held`` alone)
    reason: str


class ConflictPage(msgspec.Struct):
    items: list[ConflictRead]
    next_cursor: str | None


class ConflictResolution(msgspec.Struct):
    """The memory that now prevails, and the memories it prevailed over (0 when it had
    no open conflict: resolving is idempotent)."""

    memory: MemoryRead
    prevailed_over: list[MemoryRead]
