"""What one key may reach in its tenant: the owner chain, in one place.

Every object has an owner chain: tenant → creator → persona → relationship (and, while it
operates the relationship, a pool operator). The role policy (casbin) says what a role
may do to a kind of object; this module says WHICH objects of that kind lie under the
key's subject. Tenant-wide roles (admin, gateway, compliance) reach the whole tenant; a
creator key reaches its own creator, personas and their relationships; an operator key
reaches the relationships it operates now and, through them, their personas, creators,
users and facets. A user or facet is reachable only through a relationship the key
reaches, so a creator never learns of users who never talked to its personas.

Repositories add these predicates to their SELECTs by construction (see
``tenancy.scoped``); rows already loaded (the cached relationship card) are checked with
``Reach.operates``/``Reach.owns``. Something out of reach is reported exactly like
something that does not exist (404).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import ColumnElement, Select, false, select, true
from sqlalchemy.orm import QueryableAttribute

from tenancy.access.principal import Principal
from tenancy.enums import OperatorKind, Role
from tenancy.models import Creator, CreatorPersona, GlobalUser, Relationship, UserFacet

TENANT_WIDE = frozenset({Role.ADMIN, Role.GATEWAY, Role.COMPLIANCE})


@dataclass(frozen=True, slots=True)
class Reach:
    principal: Principal

    @property
    def tenant_wide(self) -> bool:
        return self.principal.role in TENANT_WIDE

    @property
    def _subject(self) -> str | None:
        # A creator or operator key without a subject reaches nothing.
        return self.principal.subject or None

    def _own_creator_ids(self) -> Select[tuple[uuid.UUID]]:
        return select(Creator.id).where(
            Creator.tenant_id == self.principal.tenant_id,
            Creator.external_id == self._subject,
        )

    def relationships(self) -> ColumnElement[bool]:
        """Relationships this key may see."""
        role = self.principal.role
        if self.tenant_wide:
            return true()
        if self._subject is None:
            return false()
        if role == Role.CREATOR:
            return Relationship.creator_id.in_(self._own_creator_ids().scalar_subquery())
        if role == Role.OPERATOR:
            return (Relationship.operator_kind == OperatorKind.POOL) & (
                Relationship.operator_id == self._subject
            )
        return false()

    def _through_relationships(
        self, column: QueryableAttribute[uuid.UUID]
    ) -> Select[tuple[uuid.UUID]]:
        return select(column).where(
            Relationship.tenant_id == self.principal.tenant_id, self.relationships()
        )

    def creators(self) -> ColumnElement[bool]:
        """Creators: a creator key its own; an operator the creators it speaks for."""
        if self.tenant_wide:
            return true()
        if self._subject is None:
            return false()
        if self.principal.role == Role.CREATOR:
            return Creator.external_id == self._subject
        return Creator.id.in_(self._through_relationships(Relationship.creator_id))

    def personas(self) -> ColumnElement[bool]:
        """Personas: a creator key its own creator's; an operator those it speaks as."""
        if self.tenant_wide:
            return true()
        if self._subject is None:
            return false()
        if self.principal.role == Role.CREATOR:
            return CreatorPersona.creator_id.in_(self._own_creator_ids().scalar_subquery())
        return CreatorPersona.id.in_(self._through_relationships(Relationship.creator_persona_id))

    def persona_ids(self) -> Select[tuple[uuid.UUID]]:
        """The ids of the personas this key reaches (for other domains' predicates)."""
        return select(CreatorPersona.id).where(
            CreatorPersona.tenant_id == self.principal.tenant_id, self.personas()
        )

    def users(self) -> ColumnElement[bool]:
        """Global users: only through a relationship this key reaches."""
        if self.tenant_wide:
            return true()
        return GlobalUser.id.in_(self._through_relationships(Relationship.global_user_id))

    def facets(self) -> ColumnElement[bool]:
        """Facets: only the ones a reached relationship is with (not the user's others)."""
        if self.tenant_wide:
            return true()
        return UserFacet.id.in_(self._through_relationships(Relationship.user_facet_id))

    def owns(self, creator_external_id: str) -> bool:
        """Whether a creator key acts for the creator with this external id."""
        return self.principal.role == Role.CREATOR and self._subject == creator_external_id

    def operates(self, operator_kind: OperatorKind, operator_id: str | None) -> bool:
        """Whether an operator key operates a relationship with this operator now."""
        return (
            self.principal.role == Role.OPERATOR
            and self._subject is not None
            and operator_kind == OperatorKind.POOL
            and operator_id == self._subject
        )

    def sees_relationship(
        self,
        tenant_id: uuid.UUID,
        creator_external_id: str,
        operator_kind: OperatorKind,
        operator_id: str | None,
    ) -> bool:
        """The ``relationships()`` rule for a relationship already loaded (a cached card)."""
        if tenant_id != self.principal.tenant_id:
            return False
        if self.tenant_wide:
            return True
        return self.owns(creator_external_id) or self.operates(operator_kind, operator_id)
