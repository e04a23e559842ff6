"""Reading relationships, changing their privacy mode, transferring their operator."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.access.reach import Reach
from tenancy.audit.log import Actor, AuditLog
from tenancy.errors import RelationshipNotFound, UserNotFound
from tenancy.graph.repositories import UserRepository
from tenancy.models import OwnershipEvent, Relationship
from tenancy.relationships import schemas as s
from tenancy.relationships.directory import CardCache, load_card, publish_on_commit
from tenancy.relationships.lifecycle import move_operator
from tenancy.relationships.repositories import OwnershipEventRepository, RelationshipRepository
from tether.core.pagination import decode_cursor, next_cursor


def _read(row: Relationship) -> s.RelationshipRead:
    return s.RelationshipRead(
        id=row.id,
        global_user_id=row.global_user_id,
        user_facet_id=row.user_facet_id,
        creator_persona_id=row.creator_persona_id,
        creator_id=row.creator_id,
        operator_kind=row.operator_kind,
        operator_id=row.operator_id,
        ownership_changed_at=row.ownership_changed_at,
        privacy_mode=row.privacy_mode,
        last_active_at=row.last_active_at,
        created_at=row.created_at,
        last_user_turn_at=row.last_user_turn_at,
        creator_replied_at=row.creator_replied_at,
        pool_layers=None if row.pool_layers is None else list(row.pool_layers),
    )


def _event(row: OwnershipEvent) -> s.OwnershipEventRead:
    return s.OwnershipEventRead(
        id=row.id,
        relationship_id=row.relationship_id,
        from_kind=row.from_kind,
        from_id=row.from_id,
        to_kind=row.to_kind,
        to_id=row.to_id,
        reason=row.reason,
        actor_key_id=row.actor_key_id,
        created_at=row.created_at,
    )


class RelationshipService:
    """Relationships as one key may see them; another tenant's id is simply not found."""

    def __init__(self, session: AsyncSession, principal: Principal, cards: CardCache) -> None:
        self._session = session
        self._principal = principal
        self._cards = cards
        reach = Reach(principal)
        self._relationships = RelationshipRepository(
            session, principal.tenant_id, reach.relationships()
        )
        self._users = UserRepository(session, principal.tenant_id, reach.users())
        self._events = OwnershipEventRepository(session, principal.tenant_id)

    async def require(self, relationship_id: uuid.UUID) -> Relationship:
        rows = await self._relationships.page(None, 1, Relationship.id == relationship_id)
        if not rows:
            raise RelationshipNotFound(f"no relationship {relationship_id}")
        return rows[0]

    async def get(self, relationship_id: uuid.UUID) -> s.RelationshipRead:
        return _read(await self.require(relationship_id))

    async def list(
        self,
        cursor: str | None,
        limit: int,
        user_id: uuid.UUID | None = None,
        persona_id: uuid.UUID | None = None,
        creator_id: uuid.UUID | None = None,
    ) -> s.RelationshipPage:
        criteria = []
        if user_id is not None:
            criteria.append(Relationship.global_user_id == user_id)
        if persona_id is not None:
            criteria.append(Relationship.creator_persona_id == persona_id)
        if creator_id is not None:
            criteria.append(Relationship.creator_id == creator_id)
        rows = await self._relationships.page(decode_cursor(cursor), limit, *criteria)
        return s.RelationshipPage([_read(r) for r in rows], next_cursor(rows, limit))

    async def list_for_user(
        self, user_id: uuid.UUID, cursor: str | None, limit: int
    ) -> s.RelationshipPage:
        """The user's relationships this key reaches; a user out of reach is not found."""
        if await self._users.get(user_id) is None:
            raise UserNotFound(f"no user {user_id}")
        return await self.list(cursor, limit, user_id=user_id)

    async def update(
        self, relationship_id: uuid.UUID, data: s.RelationshipUpdate
    ) -> s.RelationshipRead:
        relationship = await self.require(relationship_id)
        relationship.privacy_mode = data.privacy_mode
        await self._session.flush()
        await self._publish(relationship)
        return _read(relationship)

    async def transfer(
        self, relationship_id: uuid.UUID, data: s.TransferRequest
    ) -> s.OwnershipEventRead:
        """Hand the relationship to another operator. Its memory stays where it is: memory
        belongs to the relationship, not to whoever operates it."""
        relationship = await self.require(relationship_id)
        to = (data.to.kind, data.to.id)
        actor = Actor.of(self._principal)
        event = await move_operator(
            self._session, relationship, to, data.reason, actor, self._cards
        )
        await self._session.refresh(event)
        return _event(event)

    async def set_pool_inheritance(
        self, relationship_id: uuid.UUID, data: s.PoolInheritance
    ) -> s.RelationshipRead:
        """Choose which memory layers a pool operator inherits (the creator's choice)."""
        relationship = await self.require(relationship_id)
        relationship.pool_layers = None if data.layers is None else sorted(set(data.layers))
        await self._session.flush()
        await self._publish(relationship)
        await AuditLog(self._session).record(
            relationship.tenant_id,
            Actor.of(self._principal),
            "ownership.inheritance",
            "ownership",
            relationship_id=relationship.id,
            global_user_id=relationship.global_user_id,
            detail={"layers": relationship.pool_layers},
        )
        return _read(relationship)

    async def _publish(self, relationship: Relationship) -> None:
        """The write and read paths authorise from the cached card: replace it at commit."""
        card = await load_card(self._session, relationship.tenant_id, relationship.id)
        if card is not None:
            publish_on_commit(self._session, self._cards, card)

    async def events(
        self, relationship_id: uuid.UUID, cursor: str | None, limit: int
    ) -> s.OwnershipEventPage:
        await self.require(relationship_id)
        rows = await self._events.page(
            decode_cursor(cursor), limit, OwnershipEvent.relationship_id == relationship_id
        )
        return s.OwnershipEventPage([_event(r) for r in rows], next_cursor(rows, limit))
