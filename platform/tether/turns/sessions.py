"""Ending sessions: explicitly through the API, or by the idle sweep in the worker."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.ids import RelationshipScope
from tenancy.relationships.directory import RelationshipDirectory
from tether.core.database_errors import DATABASE_ERRORS
from tether.core.tasks import QueueUnavailable, TaskQueue
from tether.turns.claims import session_counter_key
from tether.turns.errors import IngestUnavailable
from tether.turns.repositories import ChatSessionRepository
from tether.turns.schemas import SessionEnded

log = logging.getLogger(__name__)

END_TASK = "sessions.end"
EXTRACT_TASK = "memories.extract_session"


class SessionService:
    def __init__(
        self,
        session: AsyncSession,
        directory: RelationshipDirectory,
        redis: Redis,
        tasks: TaskQueue,
    ) -> None:
        self._session = session
        self._directory = directory
        self._redis = redis
        self._tasks = tasks

    async def end(self, relationship_id: uuid.UUID, session_id: str) -> SessionEnded:
        """Queue the end of a session. The worker waits until every turn accepted for it
        is durable, closes it and extracts its memories."""
        card = await self._directory.open(relationship_id)
        degraded = ["redis"] if self._directory.redis_degraded else []
        expected = await self._accepted_count(card.scope, session_id, degraded)
        args = [str(card.tenant_id), str(card.id), session_id, expected, "explicit"]
        if "redis" not in degraded:
            try:
                await self._tasks.send(END_TASK, args)
                return SessionEnded(session_id, "ending", degraded)
            except QueueUnavailable as exc:
                log.warning("queue unavailable, ending the session in Postgres: %s", exc)
                degraded.append("queue")
        # Closed here; the sweep schedules its extraction once the queue is back.
        try:
            await ChatSessionRepository(self._session, card.scope).end(
                session_id, "explicit", datetime.now(UTC)
            )
        except DATABASE_ERRORS as exc:
            raise IngestUnavailable("the session could not be ended; retry") from exc
        return SessionEnded(session_id, "ending", degraded)

    async def _accepted_count(
        self, scope: RelationshipScope, session_id: str, degraded: list[str]
    ) -> int | None:
        """How many turns the API accepted for the session (None if unknown)."""
        if "redis" in degraded:
            return None
        try:
            raw = await self._redis.get(session_counter_key(scope, session_id))
        except RedisError:
            degraded.append("redis")
            return None
        return None if raw is None else int(raw)
