"""Reading and trimming working memory: the recent turns of live sessions in Redis
(written by the claim script when turns are accepted)."""

from __future__ import annotations

import msgspec
from redis.asyncio import Redis

from tenancy.ids import RelationshipScope
from tether.core.redis_client import as_bytes
from tether.turns.claims import WorkingMemoryEntry, working_memory_key

_decoder = msgspec.msgpack.Decoder(WorkingMemoryEntry)


class WorkingMemory:
    def __init__(self, redis: Redis) -> None:
        self._redis = redis

    async def recent(self, scope: RelationshipScope, count: int) -> list[WorkingMemoryEntry]:
        """The last ``count`` turns, oldest first. Raises RedisError when Redis is away."""
        if count <= 0:
            return []
        raw = await self._redis.lrange(working_memory_key(scope), 0, count - 1)
        return [_decoder.decode(as_bytes(item)) for item in reversed(raw)]

    async def drop_session(self, scope: RelationshipScope, session_id: str) -> int:
        """Remove an ended session's turns; its memories now carry what mattered."""
        key = working_memory_key(scope)
        raw = await self._redis.lrange(key, 0, -1)
        removed = 0
        for item in raw:
            if _decoder.decode(as_bytes(item)).session_id == session_id:
                removed += int(await self._redis.lrem(key, 1, as_bytes(item)))  # type: ignore[arg-type]
        return removed
