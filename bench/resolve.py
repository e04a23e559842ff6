"""POST /v1/resolve over HTTP on loopback with N relationships in the database.

    .venv/bin/python bench/resolve.py --relationships 100000 --seconds 15

Prints p50/p95/p99 (end to end and the server's own time from Server-Timing) and
throughput for: cache misses on existing relationships, misses that create a new
relationship, cache hits at concurrency 1 and under load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random

from _harness import api_server, load, post, services
from sqlalchemy import text

from tenancy.access.schemas import ApiKeyCreate
from tenancy.access.services import ApiKeyService, TenantService
from tenancy.enums import Role
from tether.core.database import create_engine, create_session_factory, transaction
from tether.core.ids import TenantId
from tether.core.settings import Settings

SEED = """
INSERT INTO global_users (id, tenant_id, external_id)
  SELECT gen_random_uuid(), :t, 'u-' || g FROM generate_series(1, :n) g;
INSERT INTO user_facets (id, tenant_id, global_user_id, name)
  SELECT gen_random_uuid(), :t, id, 'default' FROM global_users WHERE tenant_id = :t;
INSERT INTO creators (id, tenant_id, external_id, display_name)
  SELECT gen_random_uuid(), :t, 'c-' || g, '' FROM generate_series(1, :creators) g;
INSERT INTO creator_personas (id, tenant_id, creator_id, external_id, display_name)
  SELECT gen_random_uuid(), :t, id, 'p-' || substr(external_id, 3), '' FROM creators
  WHERE tenant_id = :t;
INSERT INTO relationships (id, tenant_id, user_facet_id, creator_persona_id, global_user_id,
                           creator_id, operator_kind, operator_id, privacy_mode)
  SELECT gen_random_uuid(), :t, f.id, p.id, u.id, p.creator_id, 'creator', c.external_id, 'normal'
  FROM global_users u
  JOIN user_facets f ON f.global_user_id = u.id
  JOIN creators c ON c.tenant_id = :t
       AND c.external_id = 'c-' || (1 + substr(u.external_id, 3)::int % :creators)
  JOIN creator_personas p ON p.creator_id = c.id
  WHERE u.tenant_id = :t;
ANALYZE;
"""


async def seed(database_url: str, redis_url: str, n: int, creators: int) -> str:
    engine = create_engine(Settings(database_url=database_url, redis_url=redis_url))
    factory = create_session_factory(engine)
    async with transaction(factory) as session:
        tenant = await TenantService(session).create("bench", "local")
        key = await ApiKeyService(session, TenantId(tenant.tenant_id)).issue(
            ApiKeyCreate(role=Role.GATEWAY)
        )
        for statement in SEED.strip().split(";\n"):
            params = {"t": tenant.tenant_id, "n": n, "creators": creators}
            await session.execute(text(statement), params if ":" in statement else {})
    await engine.dispose()
    return key.token


def body(user: int, creators: int) -> bytes:
    c = 1 + user % creators
    return json.dumps(
        {
            "user": {"external_id": f"u-{user}"},
            "persona": {"external_id": f"p-{c}", "creator_external_id": f"c-{c}"},
        }
    ).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--relationships", type=int, default=100_000)
    parser.add_argument("--creators", type=int, default=1_000)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sample", type=int, default=5_000)
    args = parser.parse_args()
    rng = random.Random(7)
    with services() as (database_url, redis_url):
        token = asyncio.run(seed(database_url, redis_url, args.relationships, args.creators))
        users = rng.sample(range(1, args.relationships + 1), args.sample)
        existing = [post("/v1/resolve", token, body(u, args.creators)) for u in users]
        new = [
            post("/v1/resolve", token, body(args.relationships + 1 + i, args.creators))
            for i in range(args.sample)
        ]
        print(
            f"# {args.relationships} relationships, {args.creators} creators, "
            f"{args.workers} API workers, load from 1 client process"
        )
        with api_server(database_url, redis_url, args.workers) as port:
            load(port, existing[:200], 4)  # warm connections, auth cache, JIT-free paths
            print(load(port, existing[200:], 8).summary("miss: existing relationship (c=8)"))
            print(load(port, new, 8).summary("miss: creates the relationship (c=8)"))
            print(load(port, existing, 1, seconds=args.seconds / 3).summary("hit (c=1)"))
            hits = load(port, existing, args.concurrency, seconds=args.seconds)
            print(hits.summary(f"hit (c={args.concurrency})"))


if __name__ == "__main__":
    main()
