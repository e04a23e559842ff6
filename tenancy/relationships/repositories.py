"""SQL for relationships and their ownership history."""

from __future__ import annotations

from sqlalchemy import ColumnElement, false, select, true

from tenancy.access.principal import Principal
from tenancy.enums import OperatorKind, Role
from tenancy.models import Creator, OwnershipEvent, Relationship
from tenancy.scoped import TenantScopedRepository


class RelationshipRepository(TenantScopedRepository[Relationship]):
    model = Relationship

    def visible_to(self, principal: Principal) -> ColumnElement[bool]:
        """Which relationships a key may see: creators their own, pool operators the ones
        they currently operate, tenant-wide roles all of them."""
        if principal.role == Role.CREATOR:
            if principal.subject is None:
                return false()
            own = select(Creator.id).where(
                Creator.tenant_id == self._tenant_id, Creator.external_id == principal.subject
            )
            return Relationship.creator_id.in_(own.scalar_subquery())
        if principal.role == Role.OPERATOR:
            if principal.subject is None:
                return false()
            return (Relationship.operator_kind == OperatorKind.POOL) & (
                Relationship.operator_id == principal.subject
            )
        return true()


class OwnershipEventRepository(TenantScopedRepository[OwnershipEvent]):
    model = OwnershipEvent
