"""What row security that fails closed (migration 0017) costs the statements of the hot
path, measured as the service's login against one embedded Postgres: each statement in
its own transaction, after the tenant setting, as a request runs it.

The same seeded database is measured at migration 0015 (content tables only, with the
``'*'`` branch; identity tables unprotected; the key found without a tenant) and at
head (every table forced, no ``'*'``, the key's tenant found by ``tether_key_tenant``),
rounds alternating between the two so that drift hits both alike.

    cd bench && ../.venv/bin/python row_security.py --relationships 20000 --rounds 4
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from _harness import seed, services
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from tenancy.access.tokens import digest
from tether.core import migrations as migrate
from tether.core.database import async_url

MEMORIES = """
INSERT INTO memories (relationship_id, id, tenant_id, memory_type, layer, polarity, content,
                      tokens, importance, confidence, occurred_at, origin)
SELECT r.id, gen_random_uuid(), r.tenant_id, 'fact', 'episodic', 'neutral',
       'memory ' || g || ' about cello and tea', ARRAY['memory', 'cello', 'tea', 'w' || g],
       0.5, 0.8, now() - g * interval '1 minute', 'manual'
FROM (SELECT id, tenant_id FROM relationships ORDER BY id LIMIT :relationships) AS r,
     generate_series(1, :per) AS g
"""
KEY_BEFORE = (
    "SELECT k.id, k.tenant_id, k.role, k.subject, t.region FROM api_keys k "
    "JOIN tenants t ON t.id = k.tenant_id WHERE k.key_hash = :d AND k.revoked_at IS NULL"
)
KEY_TENANT = (
    "SELECT set_config('tether.tenant_id', coalesce(tether_key_tenant(:d)::text, ''), true)"
)
RESOLVE = (
    "SELECT r.id FROM relationships r JOIN global_users u ON u.id = r.global_user_id "
    "JOIN user_facets f ON f.id = r.user_facet_id JOIN creators c ON c.id = r.creator_id "
    "JOIN creator_personas p ON p.id = r.creator_persona_id WHERE r.tenant_id = :t "
    "AND u.external_id = :user AND f.name = 'default' AND c.external_id = :c "
    "AND p.external_id = :p"
)
MEMORY_ROWS = (
    "SELECT id, content, occurred_at FROM memories WHERE relationship_id = :r "
    "AND tenant_id = :t AND is_active AND superseded_by IS NULL AND deleted_at IS NULL"
)
TERMS = "SELECT count(*) FROM memory_terms(:r, :t, ARRAY['cello', 'w3'])"


async def _one(conn: AsyncConnection, tenant: str, statements: list[tuple[str, dict]]) -> float:
    started = time.perf_counter()
    async with conn.begin():
        await conn.execute(text("SELECT set_config('tether.tenant_id', :t, true)"), {"t": tenant})
        for statement, values in statements:
            await conn.execute(text(statement), values)
    return (time.perf_counter() - started) * 1000


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _targets(owner_url: str, relationships: int) -> tuple[str, list[dict[str, str]]]:
    engine = create_async_engine(async_url(owner_url))
    async with engine.connect() as conn:
        tenant = str(await conn.scalar(text("SELECT id FROM tenants LIMIT 1")))
        rows = await conn.execute(
            text(
                "SELECT r.id, u.external_id, c.external_id, p.external_id FROM relationships r "
                "JOIN global_users u ON u.id = r.global_user_id "
                "JOIN creators c ON c.id = r.creator_id "
                "JOIN creator_personas p ON p.id = r.creator_persona_id "
                "ORDER BY r.id LIMIT :n"
            ),
            {"n": relationships},
        )
        targets = [{"r": str(r), "user": u, "c": c, "p": p, "t": tenant} for r, u, c, p in rows]
    await engine.dispose()
    return tenant, targets


def _cases(
    token: str, after: bool, tenant: str, targets: list[dict[str, str]]
) -> dict[str, Callable[[AsyncConnection, int], Awaitable[float]]]:
    key = {"d": digest(token)}

    async def authenticate(conn: AsyncConnection, _: int) -> float:
        # Before: the lookup named no tenant ('*' then meant every tenant).
        statements = [(KEY_TENANT, key), (KEY_BEFORE, key)] if after else [(KEY_BEFORE, key)]
        return await _one(conn, "" if after else "*", statements)

    async def resolve(conn: AsyncConnection, i: int) -> float:
        return await _one(conn, tenant, [(RESOLVE, targets[i % len(targets)])])

    async def memory_rows(conn: AsyncConnection, i: int) -> float:
        return await _one(conn, tenant, [(MEMORY_ROWS, targets[i % len(targets)])])

    async def memory_terms(conn: AsyncConnection, i: int) -> float:
        return await _one(conn, tenant, [(TERMS, targets[i % len(targets)])])

    return {
        "authenticate (cache miss)": authenticate,
        "resolve (identity join)": resolve,
        "memories of a relationship": memory_rows,
        "memory_terms()": memory_terms,
    }


async def _measure(
    app_url: str, token: str, after: bool, tenant: str, targets: list[dict[str, str]], n: int
) -> dict[str, list[float]]:
    engine = create_async_engine(async_url(app_url))
    seen: dict[str, list[float]] = {}
    async with engine.connect() as conn:
        for name, case in _cases(token, after, tenant, targets).items():
            for i in range(50):  # warm the plan and statement caches
                await case(conn, i)
            seen[name] = [await case(conn, i) for i in range(n)]
    await engine.dispose()
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--relationships", type=int, default=20_000)
    parser.add_argument("--with-memories", type=int, default=500, help="relationships")
    parser.add_argument("--memories", type=int, default=40, help="per such relationship")
    parser.add_argument("--requests", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    with services() as (owner_url, redis_url):
        token = asyncio.run(seed(owner_url, redis_url, args.relationships, 100))
        app_url = owner_url.replace("postgres:@", "tether_app@", 1)

        async def fill() -> tuple[str, list[dict[str, str]]]:
            engine = create_async_engine(async_url(owner_url))
            async with engine.begin() as conn:
                values = {"relationships": args.with_memories, "per": args.memories}
                await conn.execute(text(MEMORIES), values)
                await conn.execute(text("ANALYZE"))
            await engine.dispose()
            return await _targets(owner_url, args.with_memories)

        tenant, targets = asyncio.run(fill())
        results: dict[tuple[str, str], list[float]] = {}
        for round_ in range(args.rounds):
            for state in ("0015", "head") if round_ % 2 == 0 else ("head", "0015"):
                (migrate.downgrade if state == "0015" else migrate.upgrade)(
                    owner_url, "0015" if state == "0015" else "head"
                )
                seen = asyncio.run(
                    _measure(app_url, token, state == "head", tenant, targets, args.requests)
                )
                for name, values in seen.items():
                    results.setdefault((name, state), []).extend(values)
    print(
        f"# {args.relationships} relationships, {args.with_memories} with {args.memories} "
        f"memories, {args.rounds} rounds x {args.requests} transactions per case, as tether_app"
    )
    for (name, state), values in sorted(results.items()):
        print(
            f"{name:28} {state:5} p50={_percentile(values, 0.5):6.3f}  "
            f"p95={_percentile(values, 0.95):6.3f}  mean={statistics.fmean(values):6.3f} ms"
        )


if __name__ == "__main__":
    main()
