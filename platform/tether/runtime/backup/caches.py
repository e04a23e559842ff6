"""What a restore does to Redis. Redis holds no durable data (docs/architecture.md):
its caches describe the database as it was before the restore and are cleared;
working memory, claims and queued tasks are kept unless ``flush`` asks for a clean
slate (docs/backup.md says when)."""

from __future__ import annotations

from redis.asyncio import Redis

from tether.core.redis_client import create_redis
from tether.core.settings import Settings

# Copies of Postgres rows: partition versions and hot copies (in the hot Redis), the
# identity cache, relationship cards, consent, persona profiles, pending invalidations.
CACHE_PATTERNS = (
    "tether:pv:*",
    "tether:hot*",
    "tether:res:*",
    "tether:rel:*",
    "tether:consent:*",
    "tether:pp:*",
    "tether:uninvalidated",
)


async def _unlink(redis: Redis, patterns: tuple[str, ...]) -> int:
    removed = 0
    for pattern in patterns:
        batch: list[bytes] = []
        async for key in redis.scan_iter(match=pattern, count=1000):
            batch.append(key)
            if len(batch) >= 1000:
                removed += int(await redis.unlink(*batch))
                batch = []
        if batch:
            removed += int(await redis.unlink(*batch))
    return removed


async def reset_redis(settings: Settings, *, flush: bool) -> int:
    """Clear the caches (or, with ``flush``, everything) in the Redis databases of
    ``settings``; how many keys went (-1: flushed)."""
    urls = dict.fromkeys([settings.require_redis_url(), settings.require_hot_redis_url()])
    removed = 0
    for url in urls:
        redis = create_redis(settings, 5.0, url)
        try:
            if flush:
                await redis.flushdb()
                removed = -1
            else:
                removed += await _unlink(redis, CACHE_PATTERNS)
        finally:
            await redis.aclose()
    return removed
