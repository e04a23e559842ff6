"""Typed identifiers and the scope value that addresses relationship content."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import NewType

from tether.core.ids import TenantId

RelationshipId = NewType("RelationshipId", uuid.UUID)
GlobalUserId = NewType("GlobalUserId", uuid.UUID)
UserFacetId = NewType("UserFacetId", uuid.UUID)
CreatorId = NewType("CreatorId", uuid.UUID)
CreatorPersonaId = NewType("CreatorPersonaId", uuid.UUID)
ApiKeyId = NewType("ApiKeyId", uuid.UUID)


@dataclass(frozen=True, slots=True)
class RelationshipScope:
    """Tenant + relationship: what every repository of relationship content requires.

    Only the identity plane creates these (after proving the relationship belongs to
    the caller's tenant), so holding one is proof of that check.
    """

    tenant_id: TenantId
    relationship_id: RelationshipId


__all__ = [
    "ApiKeyId",
    "CreatorId",
    "CreatorPersonaId",
    "GlobalUserId",
    "RelationshipId",
    "RelationshipScope",
    "TenantId",
    "UserFacetId",
]
