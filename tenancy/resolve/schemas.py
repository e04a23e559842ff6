"""API shapes of /v1/resolve, and the cached value."""

from __future__ import annotations

import uuid
from typing import Annotated

import msgspec

# Printable, bounded identifiers from the caller's own systems.
ExternalId = Annotated[
    str, msgspec.Meta(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f\x7f]+$")
]


class UserRef(msgspec.Struct, forbid_unknown_fields=True):
    external_id: ExternalId


class PersonaRef(msgspec.Struct, forbid_unknown_fields=True):
    external_id: ExternalId
    creator_external_id: ExternalId


class ResolveRequest(msgspec.Struct, forbid_unknown_fields=True):
    user: UserRef
    persona: PersonaRef
    facet: ExternalId = "default"


class ResolvedIds(msgspec.Struct, array_like=True):
    """The ids a relationship is made of (also the adjacency cache's value)."""

    relationship_id: uuid.UUID
    global_user_id: uuid.UUID
    user_facet_id: uuid.UUID
    creator_persona_id: uuid.UUID
    creator_id: uuid.UUID


class ResolveResponse(msgspec.Struct):
    relationship_id: uuid.UUID
    global_user_id: uuid.UUID
    user_facet_id: uuid.UUID
    creator_persona_id: uuid.UUID
    creator_id: uuid.UUID
    created: bool
