"""Relationship cards: what the content plane needs to know about a relationship
(who owns and operates it, its privacy mode) to authorise a request, from Redis.

The write and read paths must not touch Postgres per message, so the card of every
relationship in use is cached. Readers fill the cache with SET NX and writers of a
change overwrite it after commit, so a reader holding an old row can never overwrite
a newer card. Redis down means Postgres answers (and the caller learns it).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

import msgspec
from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.access.reach import Reach
from tenancy.enums import OperatorKind, PrivacyMode
from tenancy.errors import RelationshipNotFound
from tenancy.ids import RelationshipId, RelationshipScope
from tenancy.models import Creator, Relationship
from tenancy.settings.cache import TenantSettingsCache
from tenancy.settings.schemas import ALL_LAYERS
from tether.core.ids import TenantId
from tether.core.redis_client import as_bytes
from tether.core.telemetry import annotate, traced
from tether.core.unit_of_work import on_commit

log = logging.getLogger(__name__)


class RelationshipCard(msgspec.Struct, array_like=True, frozen=True):
    id: uuid.UUID
    tenant_id: uuid.UUID
    global_user_id: uuid.UUID
    user_facet_id: uuid.UUID
    creator_persona_id: uuid.UUID
    creator_id: uuid.UUID
    creator_external_id: str
    operator_kind: OperatorKind
    operator_id: str | None
    privacy_mode: PrivacyMode
    # The memory layers a pool operator inherits (null: the tenant's setting); last, with
    # a default, so cards cached by an earlier release still decode.
    pool_layers: tuple[str, ...] | None = None

    @property
    def scope(self) -> RelationshipScope:
        return RelationshipScope(TenantId(self.tenant_id), RelationshipId(self.id))

    def visible_to(self, principal: Principal) -> bool:
        """The same rule as ``Reach.relationships()``, for a cached card."""
        return Reach(principal).sees_relationship(
            self.tenant_id, self.creator_external_id, self.operator_kind, self.operator_id
        )


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(RelationshipCard)


def card_key(tenant_id: uuid.UUID, relationship_id: uuid.UUID) -> str:
    return f"tether:rel:{tenant_id}:{relationship_id}"


async def load_card(
    session: AsyncSession, tenant_id: uuid.UUID, relationship_id: uuid.UUID
) -> RelationshipCard | None:
    """The card from Postgres (the truth), scoped to the tenant."""
    statement = (
        select(Relationship, Creator.external_id)
        .join(Creator, Creator.id == Relationship.creator_id)
        .where(Relationship.tenant_id == tenant_id, Relationship.id == relationship_id)
    )
    row = (await session.execute(statement)).one_or_none()
    if row is None:
        return None
    relationship, creator_external_id = row
    return card_of(relationship, creator_external_id)


def card_of(relationship: Relationship, creator_external_id: str) -> RelationshipCard:
    return RelationshipCard(
        id=relationship.id,
        tenant_id=relationship.tenant_id,
        global_user_id=relationship.global_user_id,
        user_facet_id=relationship.user_facet_id,
        creator_persona_id=relationship.creator_persona_id,
        creator_id=relationship.creator_id,
        creator_external_id=creator_external_id,
        operator_kind=relationship.operator_kind,
        operator_id=relationship.operator_id,
        privacy_mode=relationship.privacy_mode,
        pool_layers=None if relationship.pool_layers is None else tuple(relationship.pool_layers),
    )


class CardCache:
    def __init__(self, redis: Redis, ttl_seconds: int) -> None:
        self._redis = redis
        self._ttl = ttl_seconds

    async def get(self, tenant_id: uuid.UUID, relationship_id: uuid.UUID) -> RelationshipCard:
        """The cached card; KeyError on a miss; RedisError when Redis is away."""
        raw = await self._redis.get(card_key(tenant_id, relationship_id))
        if raw is None:
            raise KeyError(relationship_id)
        return _decoder.decode(as_bytes(raw))

    async def fill(self, card: RelationshipCard) -> None:
        """Cache a card read from Postgres unless a newer one is already there."""
        key = card_key(card.tenant_id, card.id)
        try:
            await self._redis.set(key, _encoder.encode(card), ex=self._ttl, nx=True)
        except RedisError as exc:
            log.warning("relationship card not cached: %s", type(exc).__name__)

    async def replace(self, card: RelationshipCard) -> None:
        """Publish a changed card (after its transaction committed)."""
        key = card_key(card.tenant_id, card.id)
        try:
            await self._redis.set(key, _encoder.encode(card), ex=self._ttl)
        except RedisError as exc:
            log.error("relationship card %s stale until its TTL: %s", card.id, exc)


class RelationshipDirectory:
    """Opens a relationship for a principal: the card if the principal may see it."""

    def __init__(
        self,
        session: AsyncSession,
        cache: CardCache,
        principal: Principal,
        tenant_settings: TenantSettingsCache | None = None,
    ) -> None:
        self._session = session
        self._cache = cache
        self._principal = principal
        self._tenant_settings = tenant_settings
        self.redis_degraded = False

    async def inherited_layers(
        self, card: RelationshipCard, requested: Sequence[str] | None = None
    ) -> list[str] | None:
        """The memory layers this key may read in the relationship: all (None) unless it
        is the pool operator operating it, which inherits only the layers the creator
        chose for it, or the tenant's default (decision 0047). Narrows ``requested``."""
        if not Reach(self._principal).operates(card.operator_kind, card.operator_id):
            return None if requested is None else list(requested)
        inherited: Sequence[str] = card.pool_layers or ()
        if card.pool_layers is None:
            inherited = ALL_LAYERS
            if self._tenant_settings is not None:
                document = await self._tenant_settings.get(TenantId(card.tenant_id))
                inherited = document.ownership.pool_inherits_layers
        if requested is None:
            return list(inherited)
        return [layer for layer in requested if layer in inherited]

    @traced("relationship.open")
    async def open(self, relationship_id: uuid.UUID) -> RelationshipCard:
        tenant_id = self._principal.tenant_id
        annotate(tenant_id=tenant_id, relationship_id=relationship_id)
        try:
            card: RelationshipCard | None = await self._cache.get(tenant_id, relationship_id)
        except KeyError:
            card = await self._from_postgres(tenant_id, relationship_id, fill=True)
        except RedisError as exc:
            log.warning("relationship cards unavailable, reading Postgres: %s", exc)
            self.redis_degraded = True
            card = await self._from_postgres(tenant_id, relationship_id, fill=False)
        if card is None or not card.visible_to(self._principal):
            raise RelationshipNotFound(f"no relationship {relationship_id}")
        return card

    async def _from_postgres(
        self, tenant_id: uuid.UUID, relationship_id: uuid.UUID, fill: bool
    ) -> RelationshipCard | None:
        card = await load_card(self._session, tenant_id, relationship_id)
        if card is not None and fill:
            await self._cache.fill(card)
        return card


def publish_on_commit(session: AsyncSession, cache: CardCache, card: RelationshipCard) -> None:
    """Replace the cached card once the change that produced it has committed."""
    on_commit(session, lambda: cache.replace(card))
