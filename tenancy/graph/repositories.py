"""SQL for the identity graph's nodes, each repository scoped to one tenant."""

from __future__ import annotations

from tenancy.models import Creator, CreatorPersona, GlobalUser, UserFacet
from tenancy.scoped import TenantScopedRepository


class UserRepository(TenantScopedRepository[GlobalUser]):
    model = GlobalUser


class FacetRepository(TenantScopedRepository[UserFacet]):
    model = UserFacet


class CreatorRepository(TenantScopedRepository[Creator]):
    model = Creator


class PersonaRepository(TenantScopedRepository[CreatorPersona]):
    model = CreatorPersona
