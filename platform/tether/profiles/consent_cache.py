"""The scopes of each user's current consent, from Redis: the context builder needs
them on every message and users change them rarely.

Freshness matters more here than for the other caches: a withdrawn consent must stop
the sharing at once. So a change deletes the entry *before* its transaction commits (and
is refused when it cannot, see :meth:`ConsentCache.forget`) and writes the new scopes
after the commit; readers fill a miss with SET NX, so a reader that read Postgres before
the commit cannot overwrite what the change wrote. The TTL bounds the one window left: a
reader filling between the delete and the commit while Redis then fails before the
post-commit write.
"""

from __future__ import annotations

import logging
import uuid

import msgspec
from redis.asyncio import Redis
from redis.exceptions import RedisError

from tether.core.redis_client import as_bytes
from tether.core.resources import Resources

log = logging.getLogger(__name__)
_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(list[str])


def consent_key(tenant_id: uuid.UUID, user_id: uuid.UUID) -> str:
    return f"tether:consent:{tenant_id}:{user_id}"


class ConsentCache:
    def __init__(self, redis: Redis, ttl_seconds: int) -> None:
        self._redis = redis
        self._ttl = ttl_seconds

    async def get(self, tenant_id: uuid.UUID, user_id: uuid.UUID) -> frozenset[str] | None:
        """The granted scopes (empty: none), None on a miss; raises RedisError when Redis
        is away."""
        raw = await self._redis.get(consent_key(tenant_id, user_id))
        return None if raw is None else frozenset(_decoder.decode(as_bytes(raw)))

    async def fill(self, tenant_id: uuid.UUID, user_id: uuid.UUID, scopes: frozenset[str]) -> None:
        try:
            await self._set(tenant_id, user_id, scopes, nx=True)
        except RedisError as exc:
            log.warning("consent not cached: %s", type(exc).__name__)

    async def forget(self, tenant_id: uuid.UUID, user_id: uuid.UUID) -> None:
        """Delete the entry before a change commits. Raises RedisError when Redis is
        away: the change must then not commit, or readers could be served the old
        scopes once Redis is back."""
        await self._redis.delete(consent_key(tenant_id, user_id))

    async def replace(
        self, tenant_id: uuid.UUID, user_id: uuid.UUID, scopes: frozenset[str]
    ) -> None:
        """Write a committed change's scopes."""
        try:
            await self._set(tenant_id, user_id, scopes, nx=False)
        except RedisError as exc:  # the entry was deleted before the commit: readers miss
            log.warning("consent of %s not cached after a change: %s", user_id, exc)

    async def _set(
        self, tenant_id: uuid.UUID, user_id: uuid.UUID, scopes: frozenset[str], nx: bool
    ) -> None:
        value = _encoder.encode(sorted(scopes))
        await self._redis.set(consent_key(tenant_id, user_id), value, ex=self._ttl, nx=nx)


def consent_cache(resources: Resources) -> ConsentCache:
    return ConsentCache(resources.redis, resources.settings.access.consent_cache_seconds)
