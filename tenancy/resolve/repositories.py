"""SQL of the resolver: one join to find a relationship, race-safe upserts to make one."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.enums import OperatorKind
from tenancy.models import Creator, CreatorPersona, GlobalUser, Relationship, UserFacet
from tenancy.resolve.schemas import ResolvedIds, ResolveRequest
from tenancy.settings.repositories import default_privacy_mode
from tether.core.ids import TenantId, new_id


class ResolveRepository:
    def __init__(self, session: AsyncSession, tenant_id: TenantId) -> None:
        self._session = session
        self._tenant_id = tenant_id

    async def find(self, request: ResolveRequest) -> ResolvedIds | None:
        statement = (
            select(
                Relationship.id,
                Relationship.global_user_id,
                Relationship.user_facet_id,
                Relationship.creator_persona_id,
                Relationship.creator_id,
            )
            .join(GlobalUser, GlobalUser.id == Relationship.global_user_id)
            .join(UserFacet, UserFacet.id == Relationship.user_facet_id)
            .join(Creator, Creator.id == Relationship.creator_id)
            .join(CreatorPersona, CreatorPersona.id == Relationship.creator_persona_id)
            .where(
                Relationship.tenant_id == self._tenant_id,
                GlobalUser.external_id == request.user.external_id,
                UserFacet.name == request.facet,
                Creator.external_id == request.persona.creator_external_id,
                CreatorPersona.external_id == request.persona.external_id,
            )
        )
        row = (await self._session.execute(statement)).first()
        return None if row is None else ResolvedIds(*row)

    async def _upsert(self, model: Any, **values: Any) -> tuple[uuid.UUID, bool]:
        """Insert unless the unique key exists; return (id, inserted).

        ON CONFLICT DO NOTHING waits for a concurrent inserter to commit, and the
        follow-up SELECT (a new snapshot under READ COMMITTED) then sees its row.
        """
        keys = {"tenant_id": self._tenant_id, **values}
        statement = (
            insert(model).values(id=new_id(), **keys).on_conflict_do_nothing().returning(model.id)
        )
        inserted = (await self._session.execute(statement)).scalar_one_or_none()
        if inserted is not None:
            return inserted, True
        lookup = select(model.id).filter_by(**{k: v for k, v in keys.items() if k in _KEYS[model]})
        return (await self._session.execute(lookup)).scalar_one(), False

    async def ensure(self, request: ResolveRequest) -> tuple[ResolvedIds, bool]:
        """Create whatever is missing; True when the relationship itself is new."""
        user_id, _ = await self._upsert(GlobalUser, external_id=request.user.external_id)
        facet_id, _ = await self._upsert(UserFacet, global_user_id=user_id, name=request.facet)
        creator_id, _ = await self._upsert(
            Creator, external_id=request.persona.creator_external_id, display_name=""
        )
        persona_id, _ = await self._upsert(
            CreatorPersona,
            creator_id=creator_id,
            external_id=request.persona.external_id,
            display_name="",
        )
        relationship_id, created = await self._upsert(
            Relationship,
            user_facet_id=facet_id,
            creator_persona_id=persona_id,
            global_user_id=user_id,
            creator_id=creator_id,
            operator_kind=OperatorKind.CREATOR.value,
            operator_id=request.persona.creator_external_id,
            privacy_mode=default_privacy_mode(self._tenant_id),
        )
        ids = ResolvedIds(relationship_id, user_id, facet_id, persona_id, creator_id)
        return ids, created


# The unique key of each table (tenant_id first): what identifies an existing row.
_KEYS: dict[Any, set[str]] = {
    GlobalUser: {"tenant_id", "external_id"},
    UserFacet: {"tenant_id", "global_user_id", "name"},
    Creator: {"tenant_id", "external_id"},
    CreatorPersona: {"tenant_id", "creator_id", "external_id"},
    Relationship: {"tenant_id", "user_facet_id", "creator_persona_id"},
}
