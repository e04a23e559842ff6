"""The context path's cost of the access log (decision 0042), measured in one process.

One API app in this process (as the tests build it) against embedded Postgres and Redis;
one relationship with ``--memories`` memories (hot tier); ``POST /v1/context`` at c=1 in
alternating blocks with the access log on and off (off: the app's ``access_log`` is
unset, so nothing is noted), the pending writes flushed between blocks so one mode's
writes never land in the other's timings. Prints p50/p95 per mode and the difference.

    cd bench && ../.venv/bin/python access_log.py --requests 3000 --block 250
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from _harness import hot_redis_url, services

from tenancy.access.services import TenantService
from tenancy.audit import keys as audit_keys
from tenancy.audit.access import AccessLog
from tenancy.enums import Role
from tenancy.ids import ApiKeyId
from tenancy.principal import Principal
from tether.app import bind_resources, create_app, with_outer_middleware
from tether.core.database import create_engine, create_session_factory
from tether.core.ids import TenantId, new_id
from tether.core.resources import open_resources
from tether.core.settings import Settings
from tether.core.tenant_sessions import tenant_transaction
from tether.recall.services import warm_up

FOODS = ["川菜", "火锅", "sushi", "pasta", "dumplings", "ramen", "tacos", "粤菜", "curry", "烧烤"]
QUERIES = [
    "喜欢吃什么？",
    "what food do they like",
    "最近在忙什么",
    "favourite drink",
    "周末做什么",
]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _tenant(settings: Settings) -> str:
    engine = create_engine(settings)
    tenant_id = TenantId(new_id())
    async with tenant_transaction(create_session_factory(engine), tenant_id) as session:
        created = await TenantService(session).create("access-bench", "local", tenant_id)
    await engine.dispose()
    return created.admin_token


async def _relationship(http: httpx.AsyncClient, admin: dict[str, str], memories: int) -> str:
    key = await http.post("/v1/api-keys", json={"role": "gateway"}, headers=admin)
    gateway = {"Authorization": f"Bearer {key.json()['token']}"}
    body = {
        "user": {"external_id": "u-1"},
        "persona": {"external_id": "p", "creator_external_id": "c"},
    }
    rid = (await http.post("/v1/resolve", json=body, headers=gateway)).json()["relationship_id"]
    rng = random.Random(7)
    for start in range(0, memories, 50):
        batch = [
            {"content": f"用户 #{i} likes {rng.choice(FOODS)} and {rng.choice(FOODS)}"}
            for i in range(start, min(start + 50, memories))
        ]
        done = await http.post(
            f"/v1/relationships/{rid}/memories/batch", json={"memories": batch}, headers=gateway
        )
        assert done.status_code == 200, done.text
    admin.update(gateway)  # the caller now acts as the gateway
    return rid


async def _block(http: httpx.AsyncClient, headers: dict[str, str], rid: str, n: int) -> list[float]:
    timings = []
    for i in range(n):
        body = {"relationship_id": rid, "query": QUERIES[i % len(QUERIES)]}
        started = time.perf_counter()
        response = await http.post("/v1/context", json=body, headers=headers)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text
    return timings


async def run(args: argparse.Namespace, database_url: str, redis_url: str, data_dir: Path) -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=database_url,
        redis_url=redis_url,
        hot_redis_url=hot_redis_url(),
        data_dir=data_dir,
        db={"role": "tether_app"},
        limits={"failed_auth_per_minute": 1_000_000},
    )
    audit_keys.configure(settings)
    headers = {"Authorization": f"Bearer {await _tenant(settings)}"}
    app = create_app(settings)
    async with open_resources(settings) as resources:
        bind_resources(app, resources)
        await asyncio.to_thread(warm_up, settings, app.state.embedder)
        access_log = app.state.access_log
        transport = httpx.ASGITransport(app=with_outer_middleware(app))
        async with httpx.AsyncClient(transport=transport, base_url="http://tether") as http:
            rid = await _relationship(http, headers, args.memories)
            await _block(http, headers, rid, 100)  # warm: hot tier, caches, plans
            on: list[float] = []
            off: list[float] = []
            for round_ in range(args.requests // (2 * args.block)):
                for mode in ("on", "off") if round_ % 2 == 0 else ("off", "on"):
                    app.state.access_log = access_log if mode == "on" else None
                    (on if mode == "on" else off).extend(
                        await _block(http, headers, rid, args.block)
                    )
                    await access_log.flush()
            app.state.access_log = access_log
        app.state.partitions.close()
    p50_on, p50_off = statistics.median(on), statistics.median(off)
    p95_on, p95_off = _percentile(on, 0.95), _percentile(off, 0.95)
    print(f"requests per mode: {len(on)} (blocks of {args.block}, {args.memories} memories)")
    print("| access log | p50 ms | p95 ms |")
    print("| --- | --- | --- |")
    print(f"| off | {p50_off:.2f} | {p95_off:.2f} |")
    print(f"| on | {p50_on:.2f} | {p95_on:.2f} |")
    print(
        f"| difference | {p50_on - p50_off:+.2f} ({(p50_on / p50_off - 1) * 100:+.1f} %) "
        f"| {p95_on - p95_off:+.2f} ({(p95_on / p95_off - 1) * 100:+.1f} %) |"
    )


async def note_cost(n: int = 20_000) -> float:
    """Microseconds one ``note`` costs the request (the rest is the batched write)."""
    log = AccessLog(None, 3600.0)  # type: ignore[arg-type] - never flushed here
    who = Principal(ApiKeyId(new_id()), TenantId(new_id()), Role.GATEWAY, None, "local")
    ids = [new_id() for _ in range(8)]
    started = time.perf_counter()
    for _ in range(n):
        log.note(who, "context", ids[0], ids[1], ids)
    return (time.perf_counter() - started) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--block", type=int, default=250)
    parser.add_argument("--memories", type=int, default=300)
    args = parser.parse_args()
    print(f"note(): {asyncio.run(note_cost()):.1f} µs per access event")
    with services() as (database_url, redis_url), tempfile.TemporaryDirectory() as data_dir:
        asyncio.run(run(args, database_url, redis_url, Path(data_dir)))


if __name__ == "__main__":
    main()
