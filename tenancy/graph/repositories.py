"""SQL for the identity graph's nodes, each repository scoped to one tenant."""

from __future__ import annotations

from tenancy.models import Creator, CreatorPersona, GlobalUser, UserFacet
from tenancy.scoped import TenantScopedRepository


class UserRepository(TenantScopedRepository[GlobalUser]):
    model = GlobalUser

    async def by_external_id(self, external_id: str) -> GlobalUser | None:
        statement = self._select().where(GlobalUser.external_id == external_id)
        return (await self._session.execute(statement)).scalar_one_or_none()


class FacetRepository(TenantScopedRepository[UserFacet]):
    model = UserFacet


class CreatorRepository(TenantScopedRepository[Creator]):
    model = Creator

    async def by_external_id(self, external_id: str) -> Creator | None:
        statement = self._select().where(Creator.external_id == external_id)
        return (await self._session.execute(statement)).scalar_one_or_none()


class PersonaRepository(TenantScopedRepository[CreatorPersona]):
    model = CreatorPersona
