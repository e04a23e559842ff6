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


@dataclass(frozen=True, slots=True)
class Resources:
    settings: Settings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    redis: Redis


@asynccontextmanager
async def open_resources(settings: Settings) -> AsyncIterator[Resources]:
    """Create the engine and Redis pool for this loop; dispose both on exit."""
    engine = create_engine(settings)
    redis = create_redis(settings)
    try:
        yield Resources(settings, engine, create_session_factory(engine), redis)
    finally:
        await redis.aclose()
        await engine.dispose()
