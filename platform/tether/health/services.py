"""Probes each dependency with a deadline and reports status and latency."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from redis.exceptions import RedisError
from sqlalchemy import text

import tether
from tether.core import task_queues
from tether.core.database_errors import DATABASE_ERRORS, DatabaseUnavailable
from tether.core.migrations import head_revision, is_newer_than_head
from tether.core.resources import Resources
from tether.health.heartbeat import last_beats
from tether.health.schemas import ComponentHealth, HealthRead, HotTierRead, Status
from tether.recall.store import TierStats

PROBE_TIMEOUT_SECONDS = 2.0
Probe = Callable[[], Awaitable[str]]


# The queues whose workers /health looks for (the legacy one needs none).
WORK_QUEUES = (task_queues.TURNS, task_queues.MEMORIES, task_queues.KNOWLEDGE)


# Down, they degrade the answers but not readiness: the hot tier's Redis is a cache
# (recall reads from Postgres without it), and taking every API pod out of rotation
# because a cache is away would turn a slowdown into an outage. The same for workers
# (decision 0063): the API still accepts turns while they are away (the queue holds
# them), and no API pod can bring a worker back; /health reports them, and the
# operator alerts on its worker component instead (docs/deploy.md).
OPTIONAL_COMPONENTS = frozenset({"hot_redis", "worker"})


def is_ready(report: HealthRead) -> bool:
    """Every component ready traffic depends on is ok (``OPTIONAL_COMPONENTS`` aside)."""
    return all(
        c.status == "ok" for name, c in report.components.items() if name not in OPTIONAL_COMPONENTS
    )


class ProbeFailed(Exception):
    """A dependency answered, but not with what we need."""


async def _timed(probe: Probe) -> ComponentHealth:
    started = time.perf_counter()
    try:
        detail = await asyncio.wait_for(probe(), PROBE_TIMEOUT_SECONDS)
        status: Status = "ok"
    except TimeoutError:
        status, detail = "down", f"no answer within {PROBE_TIMEOUT_SECONDS:.0f}s"
    except (*DATABASE_ERRORS, RedisError, OSError, ProbeFailed) as exc:
        cause = exc.__cause__ if isinstance(exc, DatabaseUnavailable) else None
        named = f"{type(exc).__name__}: {exc}" + (
            f" ({type(cause).__name__}: {cause})" if cause else ""
        )
        status, detail = "down", named[:300]
    return ComponentHealth(status, round((time.perf_counter() - started) * 1000, 2), detail)


class HealthService:
    """Answers /health (every component, never fails) and /ready (503 unless ready)."""

    def __init__(self, resources: Resources, tiers: TierStats | None = None) -> None:
        self._resources = resources
        self._tiers = tiers

    async def _postgres(self) -> str:
        async with self._resources.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        return "reachable"

    async def _pgvector(self) -> str:
        async with self._resources.engine.connect() as conn:
            version = await conn.scalar(
                text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            )
        if version is None:
            raise ProbeFailed("the vector extension is not installed; run `tether migrate`")
        return f"pgvector {version}"

    async def _migrations(self) -> str:
        async with self._resources.engine.connect() as conn:
            current = await conn.scalar(text("SELECT version_num FROM alembic_version"))
        if current == head_revision():
            return f"at head {current}"
        # Ahead is the rolling upgrade's normal state: not ready there would take every
        # pod of the running release out of its Service the moment the new release's
        # migration Job finishes, before one new pod is ready.
        if current is not None and is_newer_than_head(current):
            return f"schema at {current}, ahead of this release's {head_revision()} (an upgrade)"
        raise ProbeFailed(f"schema at {current}, code expects {head_revision()}")

    async def _redis(self) -> str:
        await self._resources.redis.ping()
        return "reachable"

    async def _hot_redis(self) -> str:
        resources = self._resources
        if resources.hot_redis is resources.redis:
            return "reachable (the same Redis as redis)"
        await resources.hot_redis.ping()
        return "reachable"

    async def _worker(self) -> str:
        # A PING first: an answer ends a stall pause (tether.core.redis_client), which
        # would otherwise skip the heartbeat read and report the worker gone.
        await self._resources.redis.ping()
        beats = await last_beats(self._resources.redis, WORK_QUEUES)
        missing = [queue for queue in WORK_QUEUES if queue not in beats]
        if task_queues.TURNS in missing:  # turns would not be stored
            raise ProbeFailed(
                f"no heartbeat of a worker taking the {task_queues.TURNS} queue; "
                "start one with `tether worker`"
            )
        beat = beats[task_queues.TURNS]
        found = f"heartbeat from {beat.get('host')} pid {beat.get('pid')}"
        return found if not missing else f"{found}; no worker takes {', '.join(missing)}"

    async def check(self) -> HealthRead:
        probes: dict[str, Probe] = {
            "postgres": self._postgres,
            "pgvector": self._pgvector,
            "migrations": self._migrations,
            "redis": self._redis,
            "hot_redis": self._hot_redis,
            "worker": self._worker,
        }
        results = await asyncio.gather(*(_timed(p) for p in probes.values()))
        components = dict(zip(probes, results, strict=True))
        down = [name for name, c in components.items() if c.status != "ok"]
        status: Status = "ok" if not down else "degraded"
        tiers = self._tiers
        hot_tier = (
            None
            if tiers is None
            else HotTierRead(
                tiers.local,
                tiers.hot,
                tiers.cold,
                tiers.hit_rate,
                tiers.fills,
            )
        )
        return HealthRead(status, tether.__version__, components, hot_tier)
