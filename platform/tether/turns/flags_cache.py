"""The flag layers of a (relationship, session) cached in Redis, so that a hot
``POST /v1/context`` that leaves its flags out still runs no SQL (decision 0051).

A session's own change deletes its entry before and after it commits; a change of the
persona's or tenant's defaults reaches cached sessions within ``TTL_SECONDS``. Redis
being away costs the lookup, never the answer."""

from __future__ import annotations

import logging
import uuid

import msgspec
from redis.asyncio import Redis
from redis.exceptions import RedisError

from tether.turns.flags import Layers

log = logging.getLogger(__name__)

# Short: the persona's and tenant's defaults are not invalidated per session.
TTL_SECONDS = 10


def flags_key(relationship_id: uuid.UUID, session_id: str | None) -> str:
    return f"tether:flags:{relationship_id}:{session_id or ''}"


def flags_pattern(relationship_id: uuid.UUID) -> str:
    """Every session's entry of the relationship (for erasure's scan)."""
    return f"tether:flags:{relationship_id}:*"


class FlagCache:
    """One per request: once Redis failed it is not asked again (a write would wait for
    its whole timeout, where a stalled read fails at once)."""

    def __init__(self, redis: Redis) -> None:
        self._redis = redis
        self._down = False

    async def get(self, relationship_id: uuid.UUID, session_id: str | None) -> Layers | None:
        try:
            raw = await self._redis.get(flags_key(relationship_id, session_id))
        except RedisError as exc:
            self._down = True
            log.warning("flags not read from Redis: %s", type(exc).__name__)
            return None
        if raw is None:
            return None
        try:
            return msgspec.json.decode(raw, type=Layers)
        except msgspec.ValidationError:  # written by another release: read it again
            return None

    async def put(self, relationship_id: uuid.UUID, session_id: str | None, layers: Layers) -> None:
        if self._down:
            return
        try:
            await self._redis.set(
                flags_key(relationship_id, session_id),
                msgspec.json.encode(layers),
                ex=TTL_SECONDS,
            )
        except RedisError as exc:
            log.warning("flags not cached: %s", type(exc).__name__)

    async def forget(self, relationship_id: uuid.UUID, session_id: str | None) -> None:
        try:
            await self._redis.delete(flags_key(relationship_id, session_id))
        except RedisError as exc:
            log.warning("cached flags not dropped (they expire in %ss): %s", TTL_SECONDS, exc)
