"""Persona profiles: versioned edits with optimistic concurrency (ETag / If-Match)."""

from __future__ import annotations

import uuid

from redis.exceptions import RedisError
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.audit.log import Actor, AuditLog
from tenancy.graph.services import GraphService
from tether.core.ids import TenantId
from tether.core.pagination import decode_cursor, next_cursor
from tether.core.unit_of_work import on_commit
from tether.personas.cache import ProfileCache
from tether.personas.errors import (
    ProfileChanged,
    ProfileIfMatchRequired,
    ProfileVersionNotFound,
)
from tether.personas.models import PersonaProfileVersion
from tether.personas.repositories import PersonaProfileRepository
from tether.personas.schemas import PersonaProfilePage, PersonaProfileRead, PersonaProfileWrite


def etag(version: int) -> str:
    return f'"{version}"'


def _read(persona_id: uuid.UUID, row: PersonaProfileVersion | None) -> PersonaProfileRead:
    if row is None:  # never edited: an empty profile at version 0
        return PersonaProfileRead(persona_id, 0, "", "", [], [], "", None, None)
    return PersonaProfileRead(
        creator_persona_id=row.creator_persona_id,
        version=row.version,
        background=row.background,
        tone=row.tone,
        taboos=list(row.taboos),
        scripts=list(row.scripts),
        notes=row.notes,
        edited_by_key_id=row.edited_by_key_id,
        updated_at=row.created_at,
    )


class PersonaProfileService:
    """Every PUT writes a new version; the newest is the profile."""

    def __init__(self, session: AsyncSession, principal: Principal, cache: ProfileCache) -> None:
        self._session = session
        self._cache = cache
        self._principal = principal
        self._graph = GraphService(session, principal)
        self._profiles = PersonaProfileRepository(session, principal.tenant_id)

    async def get(self, persona_id: uuid.UUID) -> PersonaProfileRead:
        await self._graph.require_persona(persona_id)
        return _read(persona_id, await self._profiles.latest(persona_id))

    async def put(
        self, persona_id: uuid.UUID, data: PersonaProfileWrite, if_match: str | None
    ) -> PersonaProfileRead:
        await self._graph.require_own_persona(persona_id)
        if if_match is None:
            raise ProfileIfMatchRequired()
        current = await self._profiles.latest(persona_id)
        version = 0 if current is None else current.version
        if if_match.strip() not in (etag(version), f"W/{etag(version)}"):
            raise ProfileChanged(
                f"you sent If-Match {if_match}, the profile is at {etag(version)}",
                current_etag=etag(version),
                current_version=version,
            )
        row = await self._profiles.append(
            creator_persona_id=persona_id,
            version=version + 1,
            background=data.background,
            tone=data.tone,
            taboos=list(data.taboos),
            scripts=list(data.scripts),
            notes=data.notes,
            edited_by_key_id=self._principal.key_id,
        )
        profile = _read(persona_id, row)
        tenant_id = self._principal.tenant_id
        await AuditLog(self._session).record(
            tenant_id,
            Actor.of(self._principal),
            "persona_profile.version",
            "persona_profile",
            detail={"persona_id": str(persona_id), "version": row.version},
        )
        on_commit(self._session, lambda: self._cache.replace(tenant_id, profile))
        return profile

    async def version(self, persona_id: uuid.UUID, version: int) -> PersonaProfileRead:
        """One version as it was saved (version 0: the empty profile before any edit)."""
        await self._graph.require_persona(persona_id)
        if version == 0:
            return _read(persona_id, None)
        row = await self._profiles.version(persona_id, version)
        if row is None:
            raise ProfileVersionNotFound(f"persona {persona_id} has no version {version}")
        return _read(persona_id, row)

    async def history(
        self, persona_id: uuid.UUID, cursor: str | None, limit: int
    ) -> PersonaProfilePage:
        await self._graph.require_persona(persona_id)
        rows = await self._profiles.page(
            decode_cursor(cursor), limit, PersonaProfileVersion.creator_persona_id == persona_id
        )
        items = [_read(persona_id, r) for r in rows]
        return PersonaProfilePage(items, next_cursor(rows, limit))


class PersonaProfileReader:
    """The current profile of a persona the caller already holds a relationship with
    (the context builder): Redis first, Postgres on a miss or outage."""

    def __init__(self, session: AsyncSession, cache: ProfileCache, tenant_id: TenantId) -> None:
        self._cache = cache
        self._tenant_id = tenant_id
        self._profiles = PersonaProfileRepository(session, tenant_id)

    async def current(self, persona_id: uuid.UUID) -> PersonaProfileRead:
        try:
            cached = await self._cache.get(self._tenant_id, persona_id)
        except RedisError:
            return _read(persona_id, await self._profiles.latest(persona_id))
        if cached is not None:
            return cached
        profile = _read(persona_id, await self._profiles.latest(persona_id))
        await self._cache.fill(self._tenant_id, profile)
        return profile
