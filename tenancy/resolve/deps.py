"""Providers for the resolver."""

from __future__ import annotations

from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.resolve.cache import ResolveCache
from tenancy.resolve.services import ResolveService
from tether.core.resources import Resources


def provide_resolve_service(
    db_session: NamedDependency[AsyncSession],
    resources: NamedDependency[Resources],
    principal: NamedDependency[Principal],
) -> ResolveService:
    cache = ResolveCache(resources.redis, resources.settings.identity.cache_ttl_seconds)
    return ResolveService(db_session, cache, principal.tenant_id)
