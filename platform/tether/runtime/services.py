"""Bring up (or point at) Postgres and Redis for one process tree."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tether.core.settings import Settings
from tether.runtime.embedded_postgres import EmbeddedPostgres, default_shared_buffers_mb
from tether.runtime.embedded_redis import EmbeddedRedis
from tether.runtime.platforms import require_embedded_redis
from tether.runtime.preflight import ensure_writable_dir


@contextmanager
def backing_services(settings: Settings, *, need_redis: bool = True) -> Iterator[Settings]:
    """Yield settings with concrete URLs; start embedded servers for the unset ones and
    stop them on exit. External URLs are used as they are. An embedded Redis comes with
    an embedded cache for the hot tier unless ``hot_redis_url`` is set (decision 0021)."""
    postgres: EmbeddedPostgres | None = None
    redises: list[EmbeddedRedis] = []
    database_url, redis_url = settings.database_url, settings.redis_url
    hot_redis_url, owner_url = settings.hot_redis_url, None
    if need_redis and redis_url is None:
        require_embedded_redis()  # before starting anything: one line, at once
    try:
        if database_url is None or (need_redis and redis_url is None):
            data_dir = ensure_writable_dir(settings.data_dir)
            if database_url is None:
                buffers = settings.embedded_shared_buffers_mb or default_shared_buffers_mb()
                postgres = EmbeddedPostgres(data_dir, shared_buffers_mb=buffers)
                # Migrations run as the server's superuser (the owner); the service
                # connects as its own login, which owns nothing (docs/security.md).
                owner_url = postgres.start()
                database_url = postgres.app_url(postgres.database)
            if need_redis and redis_url is None:
                redises.append(EmbeddedRedis(data_dir))
                redis_url = redises[-1].start()
                if hot_redis_url is None:
                    redises.append(EmbeddedRedis(data_dir, cache=True))
                    hot_redis_url = redises[-1].start()
        yield settings.with_endpoints(database_url, redis_url or "", hot_redis_url, owner_url)
    finally:
        for redis in reversed(redises):
            redis.stop()
        if postgres is not None:
            postgres.stop()
