"""Users (and their facets), creators and personas."""

from __future__ import annotations

import uuid

from litestar import Controller, delete, get, patch, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery, JSONBody
from litestar.status_codes import HTTP_200_OK

from tenancy.access.guard import policy
from tenancy.graph import schemas as s
from tenancy.graph.deps import provide_graph_service
from tenancy.graph.erasure import UserEraser
from tenancy.graph.services import GraphService
from tether.core.pagination import DEFAULT_LIMIT, Cursor, Limit

Graph = NamedDependency[GraphService]
_DEPS = {"graph_service": Provide(provide_graph_service, sync_to_thread=False)}
READ, WRITE = policy("identity", "read"), policy("identity", "write")


class UserController(Controller):
    path = "/v1/users"
    tags = ["identity"]  # noqa: RUF012
    dependencies = _DEPS

    @post(operation_id="CreateUser", opt=WRITE)
    async def create(self, data: JSONBody[s.UserCreate], graph_service: Graph) -> s.UserRead:
        """Create a global user (with its `default` facet)."""
        return await graph_service.create_user(data)

    @get(operation_id="ListUsers", opt=READ)
    async def list_users(
        self,
        graph_service: Graph,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> s.UserPage:
        """The tenant's users, oldest first, by cursor."""
        return await graph_service.list_users(cursor, limit)

    @get("/{user_id:uuid}", operation_id="GetUser", opt=READ)
    async def get_user(self, user_id: FromPath[uuid.UUID], graph_service: Graph) -> s.UserRead:
        """One user."""
        return await graph_service.get_user(user_id)

    @delete(
        "/{user_id:uuid}",
        operation_id="EraseUser",
        status_code=HTTP_200_OK,
        opt=policy("identity", "delete"),
    )
    async def erase(
        self, user_id: FromPath[uuid.UUID], user_eraser: NamedDependency[UserEraser]
    ) -> s.ErasureResult:
        """Erase the user everywhere: identity, relationships, turns, memories, profile,
        consent, caches and working memory. The audit log keeps that it happened."""
        return await user_eraser.erase(user_id)

    @post("/{user_id:uuid}/facets", operation_id="CreateFacet", opt=WRITE)
    async def create_facet(
        self, user_id: FromPath[uuid.UUID], data: JSONBody[s.FacetCreate], graph_service: Graph
    ) -> s.FacetRead:
        """Add a facet (another face the user shows some personas)."""
        return await graph_service.create_facet(user_id, data)

    @get("/{user_id:uuid}/facets", operation_id="ListFacets", opt=READ)
    async def list_facets(
        self,
        user_id: FromPath[uuid.UUID],
        graph_service: Graph,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> s.FacetPage:
        """The user's facets."""
        return await graph_service.list_facets(user_id, cursor, limit)


class CreatorController(Controller):
    path = "/v1/creators"
    tags = ["identity"]  # noqa: RUF012
    dependencies = _DEPS

    @post(operation_id="CreateCreator", opt=WRITE)
    async def create(self, data: JSONBody[s.CreatorCreate], graph_service: Graph) -> s.CreatorRead:
        """Register a creator."""
        return await graph_service.create_creator(data)

    @get(operation_id="ListCreators", opt=READ)
    async def list_creators(
        self,
        graph_service: Graph,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> s.CreatorPage:
        """The tenant's creators."""
        return await graph_service.list_creators(cursor, limit)

    @get("/{creator_id:uuid}", operation_id="GetCreator", opt=READ)
    async def get_creator(
        self, creator_id: FromPath[uuid.UUID], graph_service: Graph
    ) -> s.CreatorRead:
        """One creator."""
        return await graph_service.get_creator(creator_id)

    @patch("/{creator_id:uuid}", operation_id="UpdateCreator", opt=WRITE)
    async def update(
        self, creator_id: FromPath[uuid.UUID], data: JSONBody[s.CreatorUpdate], graph_service: Graph
    ) -> s.CreatorRead:
        """Rename a creator."""
        return await graph_service.update_creator(creator_id, data)

    @post(
        "/{creator_id:uuid}/personas",
        operation_id="CreatePersona",
        opt=policy("persona_profile", "write"),
    )
    async def create_persona(
        self, creator_id: FromPath[uuid.UUID], data: JSONBody[s.PersonaCreate], graph_service: Graph
    ) -> s.PersonaRead:
        """Add a persona to a creator (creator keys: only their own)."""
        return await graph_service.create_persona(creator_id, data)


class PersonaController(Controller):
    path = "/v1/personas"
    tags = ["identity"]  # noqa: RUF012
    dependencies = _DEPS

    @get(operation_id="ListPersonas", opt=READ)
    async def list_personas(
        self,
        graph_service: Graph,
        creator_id: FromQuery[uuid.UUID | None] = None,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> s.PersonaPage:
        """Personas, optionally of one creator."""
        return await graph_service.list_personas(creator_id, cursor, limit)

    @get("/{persona_id:uuid}", operation_id="GetPersona", opt=READ)
    async def get_persona(
        self, persona_id: FromPath[uuid.UUID], graph_service: Graph
    ) -> s.PersonaRead:
        """One persona."""
        return await graph_service.get_persona(persona_id)

    @patch(
        "/{persona_id:uuid}", operation_id="UpdatePersona", opt=policy("persona_profile", "write")
    )
    async def update(
        self, persona_id: FromPath[uuid.UUID], data: JSONBody[s.PersonaUpdate], graph_service: Graph
    ) -> s.PersonaRead:
        """Rename a persona (creator keys: only their own)."""
        return await graph_service.update_persona(persona_id, data)
