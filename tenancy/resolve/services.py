"""The resolver: cache first, then one Postgres lookup, then race-safe creation."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.resolve.cache import ResolveCache, resolve_key
from tenancy.resolve.repositories import ResolveRepository
from tenancy.resolve.schemas import ResolvedIds, ResolveRequest
from tether.core.ids import TenantId
from tether.core.telemetry import annotate, traced
from tether.core.unit_of_work import on_commit


class ResolveService:
    """Maps (user, facet, persona) to a relationship, creating what is missing.

    A cache hit touches only Redis: the session is lazy and opens no connection unless
    a statement runs.
    """

    def __init__(self, session: AsyncSession, cache: ResolveCache, tenant_id: TenantId) -> None:
        self._session = session
        self._repository = ResolveRepository(session, tenant_id)
        self._cache = cache
        self._tenant_id = tenant_id

    @traced("relationship.resolve")
    async def resolve(self, request: ResolveRequest) -> tuple[ResolvedIds, bool]:
        annotate(tenant_id=self._tenant_id)
        key = resolve_key(self._tenant_id, request)
        cached = await self._cache.get(key)
        if cached is not None:
            return cached, False
        found = await self._repository.find(request)
        created = False
        if found is None:
            found, created = await self._repository.ensure(request)
        ids = found
        if not self._cache.unavailable:
            on_commit(self._session, lambda: self._cache.put(key, ids))
        return found, created
