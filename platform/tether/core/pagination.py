"""Keyset pagination over UUIDv7 primary keys (time-ordered, so stable and cheap), or
over (time, key) where a row has no such id."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
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


# A keyset cursor over (time, text key), for rows without a time-ordered id (a chat
# session: its id is the client's). Long enough for a 128-character key in UTF-8.
KEYED_CURSOR = msgspec.Meta(max_length=704, pattern=URL_SAFE)
KeyedCursor = Annotated[str | None, query(KEYED_CURSOR)]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def encode_keyed_cursor(at: datetime, key: str) -> str:
    micros = (at - _EPOCH) // timedelta(microseconds=1)
    raw = micros.to_bytes(8, "big", signed=True) + key.encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_keyed_cursor(cursor: str | None) -> tuple[datetime, str] | None:
    """The (time, key) after which the next page starts; a malformed cursor is a 422."""
    if not cursor:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        if len(raw) < 9:
            raise ValueError("too short")
        micros = int.from_bytes(raw[:8], "big", signed=True)
        return _EPOCH + timedelta(microseconds=micros), raw[8:].decode()
    except (ValueError, TypeError, OverflowError) as exc:  # UnicodeDecodeError is a ValueError
        raise InvalidInput(
            "cursor is not one this API issued", errors=[{"field": "cursor", "message": "invalid"}]
        ) from exc


# A keyset cursor over (time, UUID): for rows ordered by their creation time, where an
# id minted by one process may sort before another process's earlier row (an API key).
# 8 bytes of µs and the 16 of the id: exactly 32 characters.
STAMPED_CURSOR = msgspec.Meta(max_length=32, pattern=URL_SAFE)
StampedCursor = Annotated[str | None, query(STAMPED_CURSOR)]


def encode_stamped_cursor(at: datetime, row_id: uuid.UUID) -> str:
    micros = (at - _EPOCH) // timedelta(microseconds=1)
    raw = micros.to_bytes(8, "big", signed=True) + row_id.bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_stamped_cursor(cursor: str | None) -> tuple[datetime, uuid.UUID] | None:
    """The (time, id) after which the next page starts; a malformed cursor is a 422."""
    if not cursor:
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        if len(raw) != 24:
            raise ValueError("not 24 bytes")
        micros = int.from_bytes(raw[:8], "big", signed=True)
        return _EPOCH + timedelta(microseconds=micros), uuid.UUID(bytes=raw[8:])
    except (ValueError, TypeError, OverflowError) as exc:
        raise InvalidInput(
            "cursor is not one this API issued", errors=[{"field": "cursor", "message": "invalid"}]
        ) from exc
