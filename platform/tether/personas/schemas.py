"""API shapes of persona profiles."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

import msgspec

LongText = Annotated[str, msgspec.Meta(max_length=20_000)]
Line = Annotated[str, msgspec.Meta(min_length=1, max_length=1_000)]


class PersonaProfileWrite(msgspec.Struct, forbid_unknown_fields=True):
    background: LongText = ""
    tone: Annotated[str, msgspec.Meta(max_length=4_000)] = ""
    taboos: Annotated[list[Line], msgspec.Meta(max_length=100)] = msgspec.field(
        default_factory=list
    )
    scripts: Annotated[list[Line], msgspec.Meta(max_length=100)] = msgspec.field(
        default_factory=list
    )
    notes: LongText = ""


class PersonaProfileRead(msgspec.Struct):
    creator_persona_id: uuid.UUID
    version: int
    background: str
    tone: str
    taboos: list[str]
    scripts: list[str]
    notes: str
    edited_by_key_id: uuid.UUID | None
    updated_at: datetime | None


class PersonaProfilePage(msgspec.Struct):
    items: list[PersonaProfileRead]
    next_cursor: str | None
