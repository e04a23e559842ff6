"""API shapes of turn ingestion and the stored-turn listing."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

import msgspec

# Printable, bounded identifiers chosen by the caller.
ClientId = Annotated[
    str, msgspec.Meta(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f\x7f]+$")
]
Role = Literal["user", "assistant"]
TurnStatus = Literal["accepted", "duplicate", "dropped"]


class TurnIn(msgspec.Struct, forbid_unknown_fields=True):
    session_id: ClientId
    role: Role
    text: str
    at: datetime | None = None
    idempotency_key: ClientId | None = None


class TurnBatch(msgspec.Struct, forbid_unknown_fields=True):
    turns: list[TurnIn]


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
