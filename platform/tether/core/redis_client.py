"""The async Redis client. Short timeouts: a Redis outage must degrade a request, not
hang it."""

from __future__ import annotations

from redis.asyncio import Redis

from tether.core.settings import Settings
from tether.core.telemetry import instrument_redis


def broker_url(redis_url: str) -> str:
    """The Celery broker URL for our Redis: kombu spells a unix socket ``redis+socket://``;
    TCP URLs pass through."""
    if redis_url.startswith("unix://"):
        path, _, query = redis_url[len("unix://") :].partition("?")
        db = dict(p.split("=", 1) for p in query.split("&") if "=" in p).get("db", "0")
        return f"redis+socket://{path}?virtual_host={db}"
    return redis_url


def as_bytes(reply: bytes | str) -> bytes:
    """A Redis reply as bytes (the typed client says either; ours returns bytes)."""
    return reply.encode() if isinstance(reply, str) else reply


# Reading or writing one value of several megabytes (a large hot partition) took longer
# than the default timeout under load, and was taken for an outage.
BULK_SOCKET_TIMEOUT_SECONDS = 2.0


def create_redis(settings: Settings, socket_timeout: float = 0.5) -> Redis:
    """A pooled client for this process (one per event loop). ``socket_timeout``: longer
    only for the client of multi-megabyte values (``Resources.bulk_redis``)."""
    client = Redis.from_url(
        settings.require_redis_url(),
        socket_connect_timeout=0.5,
        socket_timeout=socket_timeout,
        health_check_interval=30,
        decode_responses=False,
    )
    instrument_redis(client)
    return client
