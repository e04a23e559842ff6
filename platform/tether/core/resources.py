"""The process-wide resources one event loop needs: engine, sessions, Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from tether.core.database import create_engine, create_session_factory
from tether.core.redis_client import create_redis
from tether.core.settings import Settings
from tether.core.tasks import TaskQueue


@dataclass(frozen=True, slots=True)
class Resources:
    settings: Settings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    redis: Redis
    tasks: TaskQueue


@asynccontextmanager
async def open_resources(settings: Settings) -> AsyncIterator[Resources]:
    """Create the engine, Redis pool and task sender for this loop; dispose them on exit."""
    engine = create_engine(settings)
    redis = create_redis(settings)
    tasks = TaskQueue(settings)
    try:
        yield Resources(settings, engine, create_session_factory(engine), redis, tasks)
    finally:
        tasks.close()
        await redis.aclose()
        await engine.dispose()
