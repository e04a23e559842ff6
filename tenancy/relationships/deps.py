"""Providers for relationships."""

from __future__ import annotations

from litestar.datastructures import State
from litestar.di import NamedDependency
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.relationships.directory import CardCache, RelationshipDirectory
from tenancy.relationships.services import RelationshipService
from tenancy.settings.cache import TenantSettingsCache
from tether.core.settings import Settings


def provide_card_cache(
    redis: NamedDependency[Redis], settings: NamedDependency[Settings]
) -> CardCache:
    return CardCache(redis, settings.identity.card_ttl_seconds)


def provide_relationship_service(
    db_session: NamedDependency[AsyncSession],
    principal: NamedDependency[Principal],
    card_cache: NamedDependency[CardCache],
) -> RelationshipService:
    return RelationshipService(db_session, principal, card_cache)


def provide_relationship_directory(
    state: State,
    db_session: NamedDependency[AsyncSession],
    principal: NamedDependency[Principal],
    card_cache: NamedDependency[CardCache],
) -> RelationshipDirectory:
    settings: TenantSettingsCache | None = getattr(state, "tenant_settings", None)
    return RelationshipDirectory(db_session, card_cache, principal, settings)
