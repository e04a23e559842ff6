"""Business rules of the identity graph's nodes."""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

import msgspec
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.access.reach import Reach
from tenancy.enums import Role
from tenancy.errors import (
    CreatorNotFound,
    ExternalIdTaken,
    PersonaNotFound,
    UserNotFound,
)
from tenancy.graph import schemas as s
from tenancy.graph.repositories import (
    CreatorRepository,
    FacetRepository,
    PersonaRepository,
    UserRepository,
)
from tenancy.models import Creator, CreatorPersona, GlobalUser, UserFacet
from tenancy.scoped import TenantScopedRepository
from tether.core.database import TenantOwned
from tether.core.errors import Forbidden
from tether.core.pagination import decode_cursor, next_cursor

M = TypeVar("M", bound=TenantOwned)


def _user(row: GlobalUser) -> s.UserRead:
    return s.UserRead(id=row.id, external_id=row.external_id, created_at=row.created_at)


def _facet(row: UserFacet) -> s.FacetRead:
    return s.FacetRead(row.id, row.global_user_id, row.name, row.created_at)


def _creator(row: Creator) -> s.CreatorRead:
    return s.CreatorRead(row.id, row.external_id, row.display_name, row.created_at)


def _persona(row: CreatorPersona) -> s.PersonaRead:
    return s.PersonaRead(
        row.id,
        row.creator_id,
        row.external_id,
        row.display_name,
        row.created_at,
        row.memory_enabled,
        row.knowledge_enabled,
    )


class GraphService:
    """Create, read and list the users, facets, creators and personas one key reaches
    (``tenancy.access.reach``): everything else of the tenant is not found."""

    def __init__(self, session: AsyncSession, principal: Principal) -> None:
        tenant = principal.tenant_id
        reach = Reach(principal)
        self._session = session
        self._principal = principal
        self._users = UserRepository(session, tenant, reach.users())
        self._facets = FacetRepository(session, tenant, reach.facets())
        self._creators = CreatorRepository(session, tenant, reach.creators())
        self._personas = PersonaRepository(session, tenant, reach.personas())

    async def _add_unique(
        self, repository: TenantScopedRepository[M], what: str, **values: Any
    ) -> M:
        """Insert a row whose unique key may already exist (also under a race): 409."""
        try:
            async with self._session.begin_nested():
                row = await repository.add(**values)
        except IntegrityError as exc:
            raise ExternalIdTaken(f"{what} already exists") from exc
        await self._session.refresh(row)
        return row

    async def create_user(self, data: s.UserCreate) -> s.UserRead:
        user = await self._add_unique(
            self._users, f"user {data.external_id!r}", external_id=data.external_id
        )
        await self._facets.add(global_user_id=user.id, name="default")
        return _user(user)

    async def get_user(self, user_id: uuid.UUID) -> s.UserRead:
        return _user(await self.require_user(user_id))

    async def require_user(self, user_id: uuid.UUID) -> GlobalUser:
        user = await self._users.get(user_id)
        if user is None:
            raise UserNotFound(f"no user {user_id}")
        return user

    async def list_users(self, cursor: str | None, limit: int) -> s.UserPage:
        rows = await self._users.page(decode_cursor(cursor), limit)
        return s.UserPage([_user(r) for r in rows], next_cursor(rows, limit))

    async def create_facet(self, user_id: uuid.UUID, data: s.FacetCreate) -> s.FacetRead:
        await self.require_user(user_id)
        facet = await self._add_unique(
            self._facets, f"facet {data.name!r}", global_user_id=user_id, name=data.name
        )
        return _facet(facet)

    async def list_facets(self, user_id: uuid.UUID, cursor: str | None, limit: int) -> s.FacetPage:
        await self.require_user(user_id)
        rows = await self._facets.page(
            decode_cursor(cursor), limit, UserFacet.global_user_id == user_id
        )
        return s.FacetPage([_facet(r) for r in rows], next_cursor(rows, limit))

    async def create_creator(self, data: s.CreatorCreate) -> s.CreatorRead:
        creator = await self._add_unique(
            self._creators,
            f"creator {data.external_id!r}",
            external_id=data.external_id,
            display_name=data.display_name,
        )
        return _creator(creator)

    async def _require_creator(self, creator_id: uuid.UUID) -> Creator:
        creator = await self._creators.get(creator_id)
        if creator is None:
            raise CreatorNotFound(f"no creator {creator_id}")
        return creator

    def _require_manager(self) -> None:
        # Creators and personas are changed by their creator or a tenant-wide key, never by
        # a pool operator that only speaks for one of them (a creator key reaches no other
        # creator at all: that one is not found before this is asked).
        if self._principal.role == Role.OPERATOR:
            raise Forbidden("an operator key may not change creators or personas")

    async def get_creator(self, creator_id: uuid.UUID) -> s.CreatorRead:
        return _creator(await self._require_creator(creator_id))

    async def update_creator(self, creator_id: uuid.UUID, data: s.CreatorUpdate) -> s.CreatorRead:
        creator = await self._require_creator(creator_id)
        self._require_manager()
        creator.display_name = data.display_name
        await self._session.flush()
        return _creator(creator)

    async def list_creators(self, cursor: str | None, limit: int) -> s.CreatorPage:
        rows = await self._creators.page(decode_cursor(cursor), limit)
        return s.CreatorPage([_creator(r) for r in rows], next_cursor(rows, limit))

    async def create_persona(self, creator_id: uuid.UUID, data: s.PersonaCreate) -> s.PersonaRead:
        await self._require_creator(creator_id)
        self._require_manager()
        persona = await self._add_unique(
            self._personas,
            f"persona {data.external_id!r} of this creator",
            creator_id=creator_id,
            external_id=data.external_id,
            display_name=data.display_name,
        )
        return _persona(persona)

    async def require_persona(self, persona_id: uuid.UUID) -> CreatorPersona:
        persona = await self._personas.get(persona_id)
        if persona is None:
            raise PersonaNotFound(f"no persona {persona_id}")
        return persona

    async def require_own_persona(self, persona_id: uuid.UUID) -> CreatorPersona:
        """The persona, if this key may edit it (creators: only their own)."""
        persona = await self.require_persona(persona_id)
        self._require_manager()
        return persona

    async def get_persona(self, persona_id: uuid.UUID) -> s.PersonaRead:
        return _persona(await self.require_persona(persona_id))

    async def update_persona(self, persona_id: uuid.UUID, data: s.PersonaUpdate) -> s.PersonaRead:
        persona = await self.require_own_persona(persona_id)
        if data.display_name is not msgspec.UNSET:
            persona.display_name = data.display_name
        if data.memory_enabled is not msgspec.UNSET:
            persona.memory_enabled = data.memory_enabled
        if data.knowledge_enabled is not msgspec.UNSET:
            persona.knowledge_enabled = data.knowledge_enabled
        await self._session.flush()
        return _persona(persona)

    async def list_personas(
        self, creator_id: uuid.UUID | None, cursor: str | None, limit: int
    ) -> s.PersonaPage:
        criteria = [] if creator_id is None else [CreatorPersona.creator_id == creator_id]
        rows = await self._personas.page(decode_cursor(cursor), limit, *criteria)
        return s.PersonaPage([_persona(r) for r in rows], next_cursor(rows, limit))
