"""The identity adjacency cache in Redis: resolve keys → relationship ids.

Every operation degrades to a miss when Redis is unavailable; Postgres stays the truth.
"""

from __future__ import annotations

import hashlib
import logging

import msgspec
from redis.asyncio import Redis
from redis.exceptions import RedisError

from tenancy.resolve.schemas import ResolvedIds, ResolveRequest
from tether.core.ids import TenantId

log = logging.getLogger(__name__)
_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(ResolvedIds)


def resolve_key(tenant_id: TenantId, request: ResolveRequest) -> str:
    # A digest keeps keys bounded and keeps raw external ids out of Redis key space.
    parts = (
        request.user.external_id,
        request.facet,
        request.persona.creator_external_id,
        request.persona.external_id,
    )
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:40]
    return f"tether:res:{tenant_id}:{digest}"


class ResolveCache:
    def __init__(self, redis: Redis, ttl_seconds: int) -> None:
        self._redis = redis
        self._ttl = ttl_seconds
        # A read failed: do not fill either (it would wait for the same timeout).
        self.unavailable = False

    async def get(self, key: str) -> ResolvedIds | None:
        try:
            raw = await self._redis.get(key)
        except RedisError as exc:
            log.warning("resolve cache unavailable, reading Postgres: %s", type(exc).__name__)
            self.unavailable = True
            return None
        return (
            None
            if raw is None
            else _decoder.decode(bytes(raw, "utf-8") if isinstance(raw, str) else raw)
        )

    async def put(self, key: str, ids: ResolvedIds) -> None:
        try:
            await self._redis.set(key, _encoder.encode(ids), ex=self._ttl)
        except RedisError as exc:
            log.warning("resolve cache unavailable, not cached: %s", type(exc).__name__)
