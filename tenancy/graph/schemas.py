"""API shapes of users, facets, creators and personas."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

import msgspec

from tenancy.resolve.schemas import ExternalId
from tether.core.text import DisplayName, text


class UserCreate(msgspec.Struct, forbid_unknown_fields=True):
    external_id: ExternalId


class UserRead(msgspec.Struct):
    id: uuid.UUID
    external_id: str
    created_at: datetime


class UserPage(msgspec.Struct):
    items: list[UserRead]
    next_cursor: str | None


class FacetCreate(msgspec.Struct, forbid_unknown_fields=True):
    name: ExternalId


class FacetRead(msgspec.Struct):
    id: uuid.UUID
    global_user_id: uuid.UUID
    name: str
    created_at: datetime


class FacetPage(msgspec.Struct):
    items: list[FacetRead]
    next_cursor: str | None


class CreatorCreate(msgspec.Struct, forbid_unknown_fields=True):
    external_id: ExternalId
    display_name: DisplayName = ""


class CreatorUpdate(msgspec.Struct, forbid_unknown_fields=True):
    display_name: DisplayName


class CreatorRead(msgspec.Struct):
    id: uuid.UUID
    external_id: str
    display_name: str
    created_at: datetime


class CreatorPage(msgspec.Struct):
    items: list[CreatorRead]
    next_cursor: str | None


class PersonaCreate(msgspec.Struct, forbid_unknown_fields=True):
    external_id: ExternalId
    display_name: DisplayName = ""


class PersonaUpdate(msgspec.Struct, forbid_unknown_fields=True):
    display_name: DisplayName | msgspec.UnsetType = msgspec.UNSET
    # The persona's session flags (decision 0051); null: the tenant's default.
    memory_enabled: bool | msgspec.UnsetType | None = msgspec.UNSET
    knowledge_enabled: bool | msgspec.UnsetType | None = msgspec.UNSET


class PersonaRead(msgspec.Struct):
    id: uuid.UUID
    creator_id: uuid.UUID
    external_id: str
    display_name: str
    created_at: datetime
    memory_enabled: bool | None = None
    knowledge_enabled: bool | None = None


class PersonaPage(msgspec.Struct):
    items: list[PersonaRead]
    next_cursor: str | None


class ErasureResult(msgspec.Struct):
    """The erasure receipt: what each store held of the user and no longer does."""

    global_user_id: uuid.UUID
    relationships: int
    erased: bool
    # Rows or keys removed per store (Postgres tables; Redis caches, working memory,
    # hot partitions and dedup keys; queued tasks taken off the queue).
    stores: dict[str, int] = msgspec.field(default_factory=dict)


class ErasureRequest(msgspec.Struct, forbid_unknown_fields=True):
    """An erasure performed on the user's behalf (a compliance officer): why."""

    reason: Annotated[str, text(2000, min_length=3)]
