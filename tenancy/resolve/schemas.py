"""API shapes of /v1/resolve, and the cached value."""

from __future__ import annotations

import uuid

import msgspec

from tether.core.text import Identifier

# Printable, bounded identifiers from the caller's own systems.
ExternalId = Identifier


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
