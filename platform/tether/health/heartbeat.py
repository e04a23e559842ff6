"""The worker heartbeat: workers write short-lived keys, health checks read them.

One key per queue a worker takes tasks from: with worker pools (decision 0020) a live
indexing pool must not hide that nothing stores turns.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Sequence

from redis import Redis as SyncRedis
from redis.asyncio import Redis


def queue_key(queue: str) -> str:
    return f"tether:worker:heartbeat:{queue}"


def beat(client: SyncRedis, ttl_seconds: float, queues: Sequence[str]) -> None:
    """Record that a worker on this host, taking ``queues``, is alive (called from the
    worker process)."""
    payload = json.dumps(
        {"host": socket.gethostname(), "pid": os.getpid(), "at": time.time(), "queues": queues}
    )
    ttl = int(ttl_seconds * 1000)
    with client.pipeline(transaction=False) as pipe:
        for queue in queues:
            pipe.set(queue_key(queue), payload, px=ttl)
        pipe.execute()


async def last_beats(client: Redis, queues: Sequence[str]) -> dict[str, dict[str, object]]:
    """The latest heartbeat of a worker taking each of ``queues``, for those a worker
    beat for within its TTL."""
    raws = await client.mget([queue_key(q) for q in queues])
    beats = {}
    for queue, raw in zip(queues, raws, strict=True):
        if raw is not None and isinstance(value := json.loads(raw), dict):
            beats[queue] = value
    return beats
