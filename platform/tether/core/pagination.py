"""Keyset pagination over UUIDv7 primary keys (time-ordered, so stable and cheap)."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from typing import Annotated, Protocol

import msgspec

from tether.core.errors import InvalidInput
from tether.core.text import URL_SAFE, query

MAX_LIMIT = 200
LIMIT = msgspec.Meta(ge=1, le=MAX_LIMIT)
# A page size, 1..200.
Limit = Annotated[int, query(LIMIT)]
DEFAULT_LIMIT = 50
# A cursor this API issued: the base64url of a row id. Anything else answers 422 (a
# cursor of the right shape that does not decode, from ``decode_cursor``).
CURSOR = msgspec.Meta(max_length=64, pattern=URL_SAFE)
Cursor = Annotated[str | None, query(CURSOR)]


def encode_cursor(last_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(last_id.bytes).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> uuid.UUID | None:
    """The id after which the next page starts; a malformed cursor is a 422."""
    if not cursor:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        return uuid.UUID(bytes=raw)
    except (ValueError, TypeError) as exc:
        raise InvalidInput(
            "cursor is not one this API issued", errors=[{"field": "cursor", "message": "invalid"}]
        ) from exc


class HasId(Protocol):
    @property
    def id(self) -> uuid.UUID: ...


def next_cursor(rows: Sequence[HasId], limit: int) -> str | None:
    """A cursor after the last row when the page is full (there may be more), else None."""
    return encode_cursor(rows[-1].id) if rows and len(rows) == limit else None
