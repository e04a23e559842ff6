"""API shapes of turn ingestion and the stored-turn listing."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

import msgspec

from tether.core.text import Content, Identifier, items

# Printable, bounded identifiers chosen by the caller.
ClientId = Identifier
# Past the configured limit (TETHER_INGEST__MAX_BATCH, at most 1000) a batch is refused.
MAX_BATCH_TURNS = 1000
Role = Literal["user", "assistant"]
TurnStatus = Literal["accepted", "duplicate", "dropped"]


class TurnIn(msgspec.Struct, forbid_unknown_fields=True):
    session_id: ClientId
    role: Role
    text: Content
    at: datetime | None = None
    idempotency_key: ClientId | None = None
    # Memory for this turn: false keeps it out of extraction (and, where the tenant
    # says so, out of storage). Omitted: the session's, persona's, tenant's flag.
    memory_enabled: bool | None = None


class TurnBatch(msgspec.Struct, forbid_unknown_fields=True):
    turns: Annotated[list[TurnIn], items(MAX_BATCH_TURNS)]


class TurnResult(msgspec.Struct):
    index: int
    status: TurnStatus
    # The stored turn: the new one when accepted, the original when a duplicate.
    turn_id: uuid.UUID | None
    masked: list[str]


class TurnBatchResult(msgspec.Struct):
    results: list[TurnResult]
    stored: bool
    degraded: list[str]


class StoredTurn(msgspec.Struct):
    id: uuid.UUID
    session_id: str
    role: str
    text: str
    at: datetime
    masked: list[str]


class StoredTurnPage(msgspec.Struct):
    items: list[StoredTurn]
    next_cursor: str | None


class SessionEnded(msgspec.Struct):
    session_id: str
    status: Literal["ending"]
    degraded: list[str]
