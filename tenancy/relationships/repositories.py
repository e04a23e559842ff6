"""SQL for relationships and their ownership history."""

from __future__ import annotations

from tenancy.models import OwnershipEvent, Relationship
from tenancy.scoped import TenantScopedRepository


class RelationshipRepository(TenantScopedRepository[Relationship]):
    """Built with ``Reach.relationships()``: only the relationships the key reaches."""

    model = Relationship


class OwnershipEventRepository(TenantScopedRepository[OwnershipEvent]):
    model = OwnershipEvent
