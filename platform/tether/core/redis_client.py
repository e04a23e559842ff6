"""The async Redis client. Short timeouts: a Redis outage must degrade a request, not
hang it."""

from __future__ import annotations

from redis.asyncio import Redis

from tether.core.settings import Settings


def create_redis(settings: Settings) -> Redis:
    """A pooled client for this process (one per event loop)."""
    return Redis.from_url(
        settings.require_redis_url(),
        socket_connect_timeout=0.5,
        socket_timeout=0.5,
        health_check_interval=30,
        decode_responses=False,
    )
