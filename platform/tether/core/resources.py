"""The process-wide resources one event loop needs: engine, sessions, Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from tether.core.database import create_engine, create_session_factory
from tether.core.redis_client import BULK_SOCKET_TIMEOUT_SECONDS, create_redis
from tether.core.settings import Settings
from tether.core.tasks import TaskQueue


@dataclass(frozen=True, slots=True)
class Resources:
    settings: Settings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    redis: Redis
    tasks: TaskQueue
    # The hot tier's Redis (``Settings.hot_redis_url``; ``redis`` itself when that is
    # the same Redis), and a client of it with a longer socket timeout, for
    # multi-megabyte values only.
    hot_redis: Redis
    bulk_redis: Redis


@asynccontextmanager
async def open_resources(settings: Settings) -> AsyncIterator[Resources]:
    """Create the engine, Redis pool and task sender for this loop; dispose them on exit."""
    engine = create_engine(settings)
    redis = create_redis(settings)
    hot_url = settings.require_hot_redis_url()
    own_hot = hot_url != settings.require_redis_url()
    hot_redis = create_redis(settings, url=hot_url) if own_hot else redis
    bulk_redis = create_redis(settings, BULK_SOCKET_TIMEOUT_SECONDS, hot_url)
    tasks = TaskQueue(settings)
    try:
        yield Resources(
            settings, engine, create_session_factory(engine), redis, tasks, hot_redis, bulk_redis
        )
    finally:
        tasks.close()
        await bulk_redis.aclose()
        if own_hot:
            await hot_redis.aclose()
        await redis.aclose()
        await engine.dispose()
