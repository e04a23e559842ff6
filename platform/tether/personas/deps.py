"""Providers for persona profiles."""

from __future__ import annotations

from litestar.di import NamedDependency
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tether.personas.cache import ProfileCache
from tether.personas.services import PersonaProfileService


def provide_persona_profile_service(
    db_session: NamedDependency[AsyncSession],
    principal: NamedDependency[Principal],
    redis: NamedDependency[Redis],
) -> PersonaProfileService:
    return PersonaProfileService(db_session, principal, ProfileCache(redis))
