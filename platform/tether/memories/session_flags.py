"""Session flags through the API, the tenant's defaults, and forgetting a session:
its turns and the memories derived only from them."""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import replace
from datetime import UTC, datetime

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.audit.log import Actor, AuditLog
from tenancy.relationships.directory import RelationshipDirectory
from tenancy.settings.schemas import SessionsTenantSettings
from tenancy.settings.services import TenantSettingsService
from tether.core.pagination import decode_keyed_cursor, encode_keyed_cursor
from tether.core.unit_of_work import on_commit
from tether.memories import session_schemas as s
from tether.memories.forget_session import forget_session
from tether.memories.writer import Invalidate
from tether.turns.flags import FlagRepository, Layers, decide
from tether.turns.flags_cache import FlagCache
from tether.turns.repositories import ChatSessionRepository
from tether.turns.working_memory import WorkingMemory


class SessionFlagService:
    def __init__(
        self,
        session: AsyncSession,
        directory: RelationshipDirectory,
        redis: Redis,
        invalidate: Invalidate,
        principal: Principal,
    ) -> None:
        self._principal = principal
        self._session = session
        self._directory = directory
        self._redis = redis
        self._invalidate = invalidate

    async def read(self, relationship_id: uuid.UUID, session_id: str) -> s.SessionFlagsRead:
        """The flags in force for a session (an unknown session: the defaults)."""
        card = await self._directory.open(relationship_id)
        layers = await FlagRepository(self._session, card.scope).layers(session_id)
        return _flags_read(session_id, layers)

    async def sessions(
        self, relationship_id: uuid.UUID, cursor: str | None, limit: int
    ) -> s.SessionSummaryPage:
        """The relationship's sessions, most recently opened first, each with the flags
        in force (the persona's and tenant's levels are read once for the page)."""
        card = await self._directory.open(relationship_id)
        after = decode_keyed_cursor(cursor)
        inherited = await FlagRepository(self._session, card.scope).layers(None)
        rows = await ChatSessionRepository(self._session, card.scope).newest(after, limit)
        items = [
            s.SessionSummary(
                row.session_id,
                row.opened_at,
                row.last_turn_at,
                row.turn_count,
                row.ended_at,
                _flags_read(
                    row.session_id,
                    replace(
                        inherited,
                        session_memory=row.memory_enabled,
                        session_knowledge=row.knowledge_enabled,
                    ),
                ),
            )
            for row in rows
        ]
        last = rows[-1] if rows and len(rows) == limit else None
        more = None if last is None else encode_keyed_cursor(last.opened_at, last.session_id)
        return s.SessionSummaryPage(items, more)

    async def put(
        self, relationship_id: uuid.UUID, session_id: str, data: s.SessionFlagsUpdate
    ) -> s.SessionFlagsRead:
        card = await self._directory.open(relationship_id)
        await FlagRepository(self._session, card.scope).set_session(
            session_id, data.memory_enabled, data.knowledge_enabled
        )
        await self._forget_cached(card.id, session_id)
        return await self.read(relationship_id, session_id)

    async def _forget_cached(self, relationship_id: uuid.UUID, session_id: str) -> None:
        """Drop the cached flags now and again once committed, so that a context read
        between the two cannot keep the old ones longer than this request."""
        cache = FlagCache(self._redis)
        await cache.forget(relationship_id, session_id)

        async def again() -> None:
            await cache.forget(relationship_id, session_id)

        on_commit(self._session, again)

    async def forget(self, relationship_id: uuid.UUID, session_id: str) -> s.SessionForgotten:
        """Delete the session's turns, the memories only they support, its row and its
        working memory; memories that other sessions confirmed keep their other sources."""
        card = await self._directory.open(relationship_id)
        turns, memories = await forget_session(
            self._session, card.scope, session_id, datetime.now(UTC)
        )
        await AuditLog(self._session).record(
            card.tenant_id,
            Actor.of(self._principal),
            "forget_session",
            "relationship_memory",
            relationship_id=card.id,
            global_user_id=card.global_user_id,
            detail={"session_id": session_id, "turns": turns, "memories": memories},
        )
        scope = card.scope

        async def after() -> None:
            await self._invalidate(scope)
            # Without Redis, working memory expires on its own (its TTL).
            with contextlib.suppress(RedisError):
                await WorkingMemory(self._redis).drop_session(scope, session_id)

        on_commit(self._session, after)
        await self._forget_cached(card.id, session_id)  # the session's row is gone
        return s.SessionForgotten(session_id, turns, memories)


def _flags_read(session_id: str, layers: Layers) -> s.SessionFlagsRead:
    flags = decide(layers)
    return s.SessionFlagsRead(
        session_id,
        flags.memory_enabled,
        flags.knowledge_enabled,
        flags.memory_source,
        flags.knowledge_source,
        layers.session_memory,
        layers.session_knowledge,
    )


class SessionDefaultsService:
    """/v1/tenant/session-defaults: a view over the ``sessions`` section of the tenant
    settings document (decision 0086); a change is a new, audited settings version."""

    def __init__(self, settings: TenantSettingsService) -> None:
        self._settings = settings

    async def get(self) -> s.SessionDefaults:
        return _defaults((await self._settings.get()).sessions)

    async def put(self, data: s.SessionDefaults) -> s.SessionDefaults:
        section = SessionsTenantSettings(
            data.memory_enabled, data.knowledge_enabled, data.keep_turns_without_memory
        )
        return _defaults((await self._settings.put_sessions(section)).sessions)


def _defaults(section: SessionsTenantSettings) -> s.SessionDefaults:
    return s.SessionDefaults(
        section.memory_enabled, section.knowledge_enabled, section.keep_turns_without_memory
    )
