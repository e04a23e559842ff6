"""A turn between acceptance and durability: masked, identified, and encodable for the
task payload (which therefore never carries unmasked text)."""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

_SPACES = re.compile(r"\s+")


def dedup_digest(role: str, masked_text: str) -> str:
    """SHA-256 of the normalised masked text: the same words with different spacing,
    width or case are the same turn. Hashing masked text keeps low-entropy secrets
    (a phone number alone) out of Redis even as digests."""
    normal = _SPACES.sub(" ", unicodedata.normalize("NFKC", masked_text)).strip().casefold()
    return hashlib.sha256(f"{role}\x1f{normal}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class PendingTurn:
    id: uuid.UUID
    session_id: str
    role: str
    text: str
    at: datetime
    masked: tuple[str, ...]
    idempotency_key: str | None
    # The capture's memory flag (None: not given, the session's flags decide).
    memory_enabled: bool | None = None

    def to_wire(self) -> list[Any]:
        return [
            str(self.id),
            self.session_id,
            self.role,
            self.text,
            self.at.isoformat(),
            list(self.masked),
            self.idempotency_key,
            self.memory_enabled,
        ]

    @classmethod
    def from_wire(cls, item: list[Any]) -> PendingTurn:
        turn_id, session_id, role, text, at, masked, idempotency_key, *flags = item
        return cls(
            id=uuid.UUID(turn_id),
            session_id=str(session_id),
            role=str(role),
            text=str(text),
            at=datetime.fromisoformat(at),
            masked=tuple(masked),
            idempotency_key=idempotency_key,
            memory_enabled=flags[0] if flags else None,  # tasks queued before flags: 7 items
        )
