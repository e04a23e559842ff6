"""Operational tasks."""

from __future__ import annotations

from redis import Redis as SyncRedis

from tether.core.settings import Settings
from workers.app import app

PING_KEY = "tether:ping:{token}"


@app.task(name="system.ping")
def ping(token: str) -> None:
    """Proves a worker consumes the queue: leaves ``tether:ping:<token>`` for a minute."""
    settings: Settings = app.conf.tether_settings
    client = SyncRedis.from_url(settings.require_redis_url(), socket_timeout=2)
    client.set(PING_KEY.format(token=token), b"pong", ex=60)
