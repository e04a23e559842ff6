"""API shapes of the global profile and consent."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

import msgspec

from tether.core.text import items, path, text


class ConsentScope(StrEnum):
    """What a user may agree to share across the personas they talk to."""

    PROFILE = "profile"  # language, region, time zone, display name
    PREFERENCES = "preferences"  # platform-level preferences (content, notifications…)
    SPENDING = "spending"  # spending tier T-01…T-10


Sensitivity = Literal["low", "medium", "high"]
FIELD_NAME = msgspec.Meta(max_length=64, pattern="^[a-z][a-z0-9_]{0,63}$")
FieldNameInPath = Annotated[str, path(FIELD_NAME)]


class ProfileFieldWrite(msgspec.Struct, forbid_unknown_fields=True):
    value: Annotated[str, text(512, min_length=1)]  # the column's size
    scope: ConsentScope
    sensitivity: Sensitivity = "low"
    source_relationship_id: uuid.UUID | None = None


class ProfileFieldRead(msgspec.Struct):
    field: str
    value: str
    scope: str
    sensitivity: str
    source_relationship_id: uuid.UUID | None
    updated_at: datetime


class ProfileRead(msgspec.Struct):
    global_user_id: uuid.UUID
    fields: list[ProfileFieldRead]
    # Fields held back, and why (no consent for their scope / sensitivity / policy).
    withheld: dict[str, str]


class ConsentWrite(msgspec.Struct, forbid_unknown_fields=True):
    scopes: Annotated[list[ConsentScope], items(16)]
    source: Annotated[str, text(128, min_length=1)]  # the column's size


class ConsentRead(msgspec.Struct):
    scopes: list[str]
    source: str
    withdrawn: bool
    actor_key_id: uuid.UUID | None
    created_at: datetime


class ConsentState(msgspec.Struct):
    global_user_id: uuid.UUID
    current: ConsentRead | None
    history: list[ConsentRead]
