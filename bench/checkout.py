"""What a cold request pays before its first statement: a pooled connection's checkout
(with its liveness ping), BEGIN and the tenant setting, then one small query.

Compares, in one process against one embedded Postgres, the production engine
(``tether.core.database.create_engine``: its own ping, one ``SELECT 1``; decision 0019)
with the same engine using SQLAlchemy's ``pool_pre_ping`` instead (BEGIN, a query and
ROLLBACK on every checkout), rounds alternating so that drift hits both alike.

    cd bench && ../.venv/bin/python checkout.py --requests 2000 --rounds 6
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid

from _harness import services
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from tether.core.database import async_url, create_engine, create_session_factory
from tether.core.ids import TenantId
from tether.core.settings import Settings
from tether.core.tenant_sessions import tenant_transaction

TENANT = TenantId(uuid.UUID(int=1))  # any id: the query reads no table


def with_sqlalchemy_ping(settings: Settings) -> AsyncEngine:
    """The engine as it was before decision 0019's checkout ping."""
    return create_async_engine(
        async_url(settings.require_database_url()),
        pool_size=settings.db.pool_size,
        pool_pre_ping=True,
        connect_args={"timeout": settings.db.connect_timeout_seconds},
    )


async def requests(engine: AsyncEngine, count: int) -> list[float]:
    """Milliseconds per checkout + BEGIN + tenant setting + ``SELECT 1``, one at a time."""
    sessions = create_session_factory(engine)
    took = []
    for _ in range(count):
        started = time.perf_counter()
        async with tenant_transaction(sessions, TENANT) as session:
            await session.execute(text("SELECT 1"))
        took.append((time.perf_counter() - started) * 1000)
    return took


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(database_url: str, count: int, rounds: int) -> None:
    settings = Settings(database_url=database_url)
    engines = {
        "tether ping": create_engine(settings),
        "pool_pre_ping": with_sqlalchemy_ping(settings),
    }
    seen: dict[str, list[float]] = {name: [] for name in engines}
    try:
        for engine in engines.values():
            await requests(engine, 50)  # connect and warm the statement caches
        for round_ in range(rounds):
            order = list(engines) if round_ % 2 == 0 else list(engines)[::-1]
            for name in order:
                seen[name] += await requests(engines[name], count)
    finally:
        for engine in engines.values():
            await engine.dispose()
    for name, values in seen.items():
        print(
            f"{name:14} n={len(values):6}  p50={percentile(values, 0.5):6.3f}"
            f"  p95={percentile(values, 0.95):6.3f}  mean={statistics.fmean(values):6.3f} ms"
        )
    ours, theirs = (statistics.median(seen[n]) for n in engines)
    print(f"median ratio tether ping / pool_pre_ping: {ours / theirs:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=2000, help="per engine and round")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    with services() as (database_url, _):
        asyncio.run(measure(database_url, args.requests, args.rounds))


if __name__ == "__main__":
    main()
