"""What a user's consent in force allows, with the record it comes from."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

NO_RECORD = "0" * 32  # sorts before every record id


@dataclass(frozen=True, slots=True)
class Grant:
    """``version``: the consent record's id as 32 hex digits (record ids are UUIDv7, so
    a later record has a greater version), ``NO_RECORD`` when the user never answered.
    ``scopes`` is empty without a record or after a withdrawal."""

    version: str
    scopes: frozenset[str]

    @classmethod
    def of(cls, record_id: uuid.UUID | None, scopes: frozenset[str]) -> Grant:
        return cls(NO_RECORD if record_id is None else record_id.hex, scopes)
