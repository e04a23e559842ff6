"""The worker heartbeat: workers write a short-lived key, health checks read it."""

from __future__ import annotations

import json
import os
import socket
import time

from redis import Redis as SyncRedis
from redis.asyncio import Redis

HEARTBEAT_KEY = "tether:worker:heartbeat"


def beat(client: SyncRedis, ttl_seconds: float) -> None:
    """Record that a worker on this host is alive (called from the worker process)."""
    payload = {"host": socket.gethostname(), "pid": os.getpid(), "at": time.time()}
    client.set(HEARTBEAT_KEY, json.dumps(payload), px=int(ttl_seconds * 1000))


async def last_beat(client: Redis) -> dict[str, object] | None:
    """The latest heartbeat, or None when no worker beat within its TTL."""
    raw = await client.get(HEARTBEAT_KEY)
    if raw is None:
        return None
    value = json.loads(raw)
    return value if isinstance(value, dict) else None
