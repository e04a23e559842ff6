"""Persona profiles for the context builder, from Redis: a profile is read on every
message and edited rarely. Readers fill with SET NX; an edit replaces the entry after
its commit, so an older profile never overwrites a newer one."""

from __future__ import annotations

import logging
import uuid

import msgspec
from redis.asyncio import Redis
from redis.exceptions import RedisError

from tether.core.redis_client import as_bytes
from tether.personas.schemas import PersonaProfileRead

log = logging.getLogger(__name__)
_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(PersonaProfileRead)
TTL_SECONDS = 24 * 3600


def _key(tenant_id: uuid.UUID, persona_id: uuid.UUID) -> str:
    return f"tether:pp:{tenant_id}:{persona_id}"


class ProfileCache:
    def __init__(self, redis: Redis) -> None:
        self._redis = redis

    async def get(self, tenant_id: uuid.UUID, persona_id: uuid.UUID) -> PersonaProfileRead | None:
        """The cached profile, None on a miss; raises RedisError when Redis is away."""
        raw = await self._redis.get(_key(tenant_id, persona_id))
        return None if raw is None else _decoder.decode(as_bytes(raw))

    async def fill(self, tenant_id: uuid.UUID, profile: PersonaProfileRead) -> None:
        await self._set(tenant_id, profile, nx=True)

    async def replace(self, tenant_id: uuid.UUID, profile: PersonaProfileRead) -> None:
        await self._set(tenant_id, profile, nx=False)

    async def _set(self, tenant_id: uuid.UUID, profile: PersonaProfileRead, nx: bool) -> None:
        key = _key(tenant_id, profile.creator_persona_id)
        try:
            await self._redis.set(key, _encoder.encode(profile), ex=TTL_SECONDS, nx=nx)
        except RedisError as exc:
            log.warning("persona profile not cached: %s", exc)
