"""API shapes of POST /v1/context."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

import msgspec

from tenancy.resolve.schemas import ExternalId, PersonaRef, UserRef
from tether.core.text import CONTENT_CHARS, Identifier, items, text

Query = Annotated[str, text(4000, min_length=1)]


class ChatMessage(msgspec.Struct, forbid_unknown_fields=True):
    role: Literal["system", "user", "assistant", "tool"]
    content: Annotated[str, text(CONTENT_CHARS)]  # may be empty (a tool call's turn)


class ContextRequest(msgspec.Struct, forbid_unknown_fields=True):
    query: Query
    relationship_id: uuid.UUID | None = None
    user: UserRef | None = None
    persona: PersonaRef | None = None
    facet: ExternalId = "default"
    max_tokens: Annotated[int, msgspec.Meta(ge=200, le=32_000)] | None = None
    # Omitted (null): the session's flag, else the persona's, else the tenant's
    # (decision 0051; the tenant's defaults are true and false).
    memory_enabled: bool | None = None
    knowledge_enabled: bool | None = None
    knowledge_base_id: uuid.UUID | None = None
    recent_turns: Annotated[int, msgspec.Meta(ge=0, le=50)] = 6
    messages: Annotated[list[ChatMessage], items(200)] | None = None
    # A "last time" recap section (time since the last contact, open plans, feelings):
    # off by default, it reads Postgres; send it on the first message of a session.
    last_time: bool = False
    # The session this message belongs to: its flags apply, and it is left out of
    # "last time".
    session_id: Identifier | None = None


class ContextItem(msgspec.Struct):
    section: str
    kind: str
    id: uuid.UUID | None
    text: str
    tokens: int
    score: float | None
    reason: str


class SectionBudget(msgspec.Struct):
    limit: int
    used: int
    dropped: int


class ContextResponse(msgspec.Struct):
    relationship_id: uuid.UUID
    context: str
    messages: list[ChatMessage]
    items: list[ContextItem]
    token_estimate: int
    budget: dict[str, SectionBudget]
    degraded: list[str]
    timings_ms: dict[str, float]
