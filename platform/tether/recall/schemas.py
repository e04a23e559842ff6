"""API shapes of /search."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

import msgspec

from tether.core.text import SHORT_TEXT_CHARS, items, text
from tether.recall.enums import MemoryLayer, MemoryType

Query = Annotated[str, text(SHORT_TEXT_CHARS, min_length=1)]


class SearchRequest(msgspec.Struct, forbid_unknown_fields=True):
    query: Query
    k: Annotated[int, msgspec.Meta(ge=1, le=50)] = 5
    types: Annotated[list[MemoryType], items(16)] | None = None
    layers: Annotated[list[MemoryLayer], items(16)] | None = None


class ExplanationRead(msgspec.Struct):
    lexical_rank: int | None
    lexical_score: float | None
    vector_rank: int | None
    vector_similarity: float | None
    rrf_score: float
    fused_score: float
    neighbour_boost: float
    neighbour_id: uuid.UUID | None
    decay: float
    importance: float
    confidence: float
    final_score: float
    # False: no memory matched the query, and this is one of the nearest by meaning
    # (returned so that a plain question never comes back empty; decision 0054).
    relevant: bool = True
    # 1 + the period boost when the query named a period ("in May 2023", 上个月) this
    # memory occurred in; 1 otherwise (decision 0091).
    period: float = 1.0


class SearchHit(msgspec.Struct):
    id: uuid.UUID
    external_id: str | None
    content: str
    memory_type: str
    layer: str
    occurred_at: datetime
    score: float
    explanation: ExplanationRead


class SearchResponse(msgspec.Struct):
    items: list[SearchHit]
    degraded: list[str]
    tier: str
    timings_ms: dict[str, float]
