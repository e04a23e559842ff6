"""Relationships, their privacy mode, and ownership transfer."""

from __future__ import annotations

import uuid

from litestar import Controller, get, patch, post, put
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, FromQuery, JSONBody

from tenancy.access.guard import policy
from tenancy.relationships import schemas as s
from tenancy.relationships.deps import provide_relationship_service
from tenancy.relationships.services import RelationshipService
from tether.core.pagination import DEFAULT_LIMIT, Cursor, Limit

Relationships = NamedDependency[RelationshipService]
_DEPS = {"relationship_service": Provide(provide_relationship_service, sync_to_thread=False)}
READ, WRITE = policy("identity", "read"), policy("identity", "write")


class RelationshipController(Controller):
    path = "/v1/relationships"
    tags = ["identity"]  # noqa: RUF012
    dependencies = _DEPS

    @get(operation_id="ListRelationships", opt=READ)
    async def list_relationships(
        self,
        relationship_service: Relationships,
        user_id: FromQuery[uuid.UUID | None] = None,
        persona_id: FromQuery[uuid.UUID | None] = None,
        creator_id: FromQuery[uuid.UUID | None] = None,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> s.RelationshipPage:
        """Relationships this key may see, optionally filtered."""
        return await relationship_service.list(cursor, limit, user_id, persona_id, creator_id)

    @get("/{relationship_id:uuid}", operation_id="GetRelationship", opt=READ)
    async def get_relationship(
        self, relationship_id: FromPath[uuid.UUID], relationship_service: Relationships
    ) -> s.RelationshipRead:
        """One relationship."""
        return await relationship_service.get(relationship_id)

    @patch("/{relationship_id:uuid}", operation_id="UpdateRelationship", opt=WRITE)
    async def update(
        self,
        relationship_id: FromPath[uuid.UUID],
        data: JSONBody[s.RelationshipUpdate],
        relationship_service: Relationships,
    ) -> s.RelationshipRead:
        """Change the privacy mode (`normal`, `raw_only`, `off`)."""
        return await relationship_service.update(relationship_id, data)

    @post("/{relationship_id:uuid}/transfer", operation_id="TransferRelationship", opt=WRITE)
    async def transfer(
        self,
        relationship_id: FromPath[uuid.UUID],
        data: JSONBody[s.TransferRequest],
        relationship_service: Relationships,
    ) -> s.OwnershipEventRead:
        """Hand the relationship to the creator or a pool operator; memory stays."""
        return await relationship_service.transfer(relationship_id, data)

    @put(
        "/{relationship_id:uuid}/pool-inheritance",
        operation_id="PutPoolInheritance",
        opt=policy("ownership", "write"),
    )
    async def pool_inheritance(
        self,
        relationship_id: FromPath[uuid.UUID],
        data: JSONBody[s.PoolInheritance],
        relationship_service: Relationships,
    ) -> s.RelationshipRead:
        """Choose the memory layers a pool operator inherits while it operates this
        relationship (creator or admin); private notes are never inherited."""
        return await relationship_service.set_pool_inheritance(relationship_id, data)

    @get("/{relationship_id:uuid}/ownership-events", operation_id="ListOwnershipEvents", opt=READ)
    async def events(
        self,
        relationship_id: FromPath[uuid.UUID],
        relationship_service: Relationships,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> s.OwnershipEventPage:
        """Every operator change of the relationship, oldest first."""
        return await relationship_service.events(relationship_id, cursor, limit)


class UserRelationshipController(Controller):
    path = "/v1/users/{user_id:uuid}/relationships"
    tags = ["identity"]  # noqa: RUF012
    dependencies = _DEPS

    @get(operation_id="ListUserRelationships", opt=READ)
    async def list_for_user(
        self,
        user_id: FromPath[uuid.UUID],
        relationship_service: Relationships,
        cursor: FromQuery[Cursor] = None,
        limit: FromQuery[Limit] = DEFAULT_LIMIT,
    ) -> s.RelationshipPage:
        """The user's relationships (one index scan on tenant + user)."""
        return await relationship_service.list_for_user(user_id, cursor, limit)
