"""API shapes of persona profiles."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

import msgspec

from tether.core.text import LongText, in_list, items, text

LINE = text(1_000, min_length=1)
Line = Annotated[str, LINE, in_list(LINE)]


class PersonaProfileWrite(msgspec.Struct, forbid_unknown_fields=True):
    background: LongText = ""
    tone: Annotated[str, text(4_000)] = ""
    taboos: Annotated[list[Line], items(100)] = msgspec.field(default_factory=list)
    scripts: Annotated[list[Line], items(100)] = msgspec.field(default_factory=list)
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
