"""API shapes of POST /v1/memories/extract (the extraction preview)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

import msgspec

from tether.core.text import items, text

# A preview runs the whole pipeline inline, in the request: it is bounded like one
# session of moderate length, not like a batch import.
MAX_PREVIEW_TURNS = 200
MAX_PREVIEW_TURN_CHARS = 4000
MAX_PREVIEW_TOTAL_CHARS = 40_000

PreviewAction = Literal["insert", "update", "supersede", "duplicate", "hold"]


class PreviewTurn(msgspec.Struct, forbid_unknown_fields=True):
    role: Literal["user", "assistant"]
    text: Annotated[str, text(MAX_PREVIEW_TURN_CHARS, min_length=1)]
    at: datetime | None = None


class ExtractPreviewRequest(msgspec.Struct, forbid_unknown_fields=True):
    relationship_id: uuid.UUID
    turns: Annotated[list[PreviewTurn], items(MAX_PREVIEW_TURNS, min_length=1)]
    # Only dry runs exist: the field makes the contract explicit for SDKs and logs.
    dry_run: bool = True


class PreviewCandidate(msgspec.Struct):
    index: int
    memory_type: str
    subject: str
    predicate: str
    object: str
    polarity: str
    content: str
    importance: float
    confidence: float
    expires_at: datetime | None
    source_turns: list[int]  # indexes into the request's turns


class PreviewDecision(msgspec.Struct):
    candidate: int
    outcome: str  # consolidation's verdict: duplicate | compatible | update | ...
    action: PreviewAction  # what the write path would do with it
    target_memory_id: uuid.UUID | None  # a stored memory (None: another candidate or none)
    target_candidate: int | None  # an earlier candidate of this preview
    reason: str


class PreviewForget(msgspec.Struct):
    terms: list[str]
    source_turn: int
    would_deactivate: list[uuid.UUID]


class ExtractPreview(msgspec.Struct):
    relationship_id: uuid.UUID
    dry_run: bool
    candidates: list[PreviewCandidate]
    decisions: list[PreviewDecision]
    forget: list[PreviewForget]
    summary: str | None
    masked: list[str]  # kinds of personal data the privacy filter masked first
    steps: list[str]  # "rules" (the LLM step only runs in the worker)
