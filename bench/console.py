"""Console page render times on loopback: the memory viewer of a relationship with
5,000 memories and the audit explorer over 1,000,000 audit events (paged: each page
reads one page of rows, never the whole log).

    .venv/bin/python bench/console.py --memories 5000 --audit-rows 1000000 --requests 200

Memories go in through the API (batches of 500, as an import would); the audit events
are inserted with SQL (a generated chain: the explorer pages them, it does not verify
them). One API process under uvicorn, as the application role (row-level security on),
signed in to the console with an API key. Prints p50/p95/p99 end to end and the
server's own time (Server-Timing) for each page.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time

import httpx
from _harness import api_server, load, services
from sqlalchemy import text

from tenancy.access.schemas import ApiKeyCreate
from tenancy.access.services import ApiKeyService, TenantService
from tenancy.enums import Role
from tether.core.database import create_engine, create_session_factory, transaction
from tether.core.ids import TenantId
from tether.core.settings import Settings

AUDIT = """
INSERT INTO audit_events (id, tenant_id, seq, at, actor_key_id, actor_role, actor_subject,
                          action, object, decision, matched_rule, relationship_id,
                          global_user_id, request_id, detail, prev_hash, hash)
SELECT uuidv7(), CAST(:t AS uuid), :start + g, now() - make_interval(secs => (:n - g) * 0.5),
       CAST(:key AS uuid),
       (ARRAY['gateway','creator','operator','compliance','admin'])[1 + g % 5],
       NULL,
       (ARRAY['profile.read','export','forget','consent.change','policy.check'])[1 + g % 5],
       (ARRAY['global_user_profile','relationship_memory','audit','policy'])[1 + g % 4],
       CASE WHEN g % 50 = 0 THEN 'deny' ELSE 'allow' END,
       NULL, CASE WHEN g % 3 = 0 THEN CAST(:r AS uuid) END,
       CASE WHEN g % 7 = 0 THEN CAST(:u AS uuid) END,
       md5(g::text), '{}'::jsonb,
       encode(sha256(((g - 1)::text)::bytea), 'hex'), encode(sha256((g::text)::bytea), 'hex')
FROM generate_series(1, :n) g
"""

SENTENCES = [
    "The user likes {x} on weekends",
    "用户喜欢在周末{x}",
    "The user mentioned their cat {x}",
    "用户说明天要去{x}",
    "The user prefers {x} tea",
    "用户最近在学{x}",
]
THINGS = ["hiking", "爬山", "Mochi", "杭州", "green", "吉他", "running", "做饭", "jasmine", "日语"]


async def _seed(database_url: str, redis_url: str) -> dict[str, str]:
    engine = create_engine(Settings(database_url=database_url, redis_url=redis_url))
    factory = create_session_factory(engine)
    async with transaction(factory) as session:
        tenant = await TenantService(session).create("bench", "local")
        keys = {"admin": tenant.admin_token, "tenant": str(tenant.tenant_id)}
        for role in (Role.GATEWAY, Role.COMPLIANCE):
            created = await ApiKeyService(session, TenantId(tenant.tenant_id)).issue(
                ApiKeyCreate(role=role)
            )
            keys[role.value] = created.token
            keys[role.value + "_id"] = str(created.key.id)
    await engine.dispose()
    return keys


async def _audit_rows(
    database_url: str, keys: dict[str, str], rel: dict[str, str], n: int
) -> float:
    engine = create_engine(Settings(database_url=database_url, redis_url="redis://unused"))
    started = time.perf_counter()
    async with engine.begin() as conn:
        tenant = keys["tenant"]
        head = (
            await conn.execute(
                text("SELECT seq FROM audit_chain_heads WHERE tenant_id = :t"), {"t": tenant}
            )
        ).scalar_one()
        params = {
            "t": tenant,
            "start": head,
            "n": n,
            "key": keys["gateway_id"],
            "r": rel["relationship_id"],
            "u": rel["global_user_id"],
        }
        await conn.execute(text(AUDIT), params)
        await conn.execute(
            text("UPDATE audit_chain_heads SET seq = :s WHERE tenant_id = :t"),
            {"s": head + n, "t": tenant},
        )
    async with engine.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text("ANALYZE audit_events"))
    await engine.dispose()
    return time.perf_counter() - started


def _memories(port: int, token: str, rid: str, n: int) -> float:
    headers = {"Authorization": f"Bearer {token}"}
    started = time.perf_counter()
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=120) as http:
        for batch in range(0, n, 500):
            items = [
                {
                    "content": SENTENCES[i % len(SENTENCES)].format(
                        x=THINGS[(i // 7) % len(THINGS)]
                    )
                    + f" #{i}",
                    "memory_type": ["preference", "fact", "event"][i % 3],
                    "layer": ["semantic", "episodic"][i % 2],
                }
                for i in range(batch, min(n, batch + 500))
            ]
            answer = http.post(f"/v1/relationships/{rid}/memories/batch", json={"memories": items})
            answer.raise_for_status()
    return time.perf_counter() - started


def _sign_in(port: int, token: str) -> str:
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", follow_redirects=False) as http:
        form = http.get("/console/sign-in")
        csrf = re.search(r'name="_csrf" value="([^"]+)"', form.text).group(1)
        http.post("/console/sign-in", data={"_csrf": csrf, "api_key": token})
        return http.cookies["tether_console"]


def _get(path: str, cookie: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: bench\r\nCookie: tether_console={cookie}\r\n\r\n".encode()


def _next_cursor(port: int, cookie: str, path: str, pages: int) -> str:
    """The cursor of page ``pages + 1`` (a deep page), following the pages' own links."""
    cursor = ""
    with httpx.Client(
        base_url=f"http://127.0.0.1:{port}", cookies={"tether_console": cookie}
    ) as http:
        for _ in range(pages):
            sep = "&" if "?" in path else "?"
            page = http.get(path + (f"{sep}cursor={cursor}" if cursor else ""))
            found = re.search(r'href="\?cursor=([^"&]+)', page.text)
            if not found:
                break
            cursor = found.group(1)
    return cursor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=5_000)
    parser.add_argument("--audit-rows", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    with services() as (database_url, redis_url):
        keys = asyncio.run(_seed(database_url, redis_url))
        with api_server(database_url, redis_url, 1, app_role=True) as port:
            gateway = {"Authorization": f"Bearer {keys['gateway']}"}
            rel = httpx.post(
                f"http://127.0.0.1:{port}/v1/resolve",
                json={
                    "user": {"external_id": "u-1"},
                    "persona": {"external_id": "luna", "creator_external_id": "studio"},
                },
                headers=gateway,
                timeout=30,
            ).json()
            rid = rel["relationship_id"]
            took = _memories(port, keys["gateway"], rid, args.memories)
            print(f"# {args.memories} memories in one relationship via the API in {took:.1f} s")
            took = asyncio.run(_audit_rows(database_url, keys, rel, args.audit_rows))
            print(f"# {args.audit_rows} audit events inserted with SQL in {took:.1f} s")
            reader = _sign_in(port, keys["gateway"])
            auditor = _sign_in(port, keys["compliance"])
            deep = _next_cursor(port, reader, f"/console/relationships/{rid}", 20)
            memory_id = httpx.get(
                f"http://127.0.0.1:{port}/v1/relationships/{rid}/memories?limit=1",
                headers=gateway,
            ).json()["items"][0]["id"]
            audit_deep = _next_cursor(port, auditor, "/console/audit", 20)
            pages = [
                ("memory viewer: newest page", reader, f"/console/relationships/{rid}"),
                ("memory viewer: page 21", reader, f"/console/relationships/{rid}?cursor={deep}"),
                (
                    "memory viewer: type + layer filter",
                    reader,
                    f"/console/relationships/{rid}?memory_type=event&layer=episodic",
                ),
                (
                    "memory: why remembered",
                    reader,
                    f"/console/relationships/{rid}/memories/{memory_id}",
                ),
                ("audit explorer: newest page", auditor, "/console/audit"),
                ("audit explorer: page 21", auditor, f"/console/audit?cursor={audit_deep}"),
                ("audit explorer: denied only", auditor, "/console/audit?decision=deny"),
                (
                    "audit explorer: one relationship",
                    auditor,
                    f"/console/audit?relationship_id={rid}",
                ),
                (
                    "audit explorer: a 10-minute window",
                    auditor,
                    "/console/audit?since="
                    + time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 86400 * 2))
                    + "&until="
                    + time.strftime(
                        "%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 86400 * 2 + 600)
                    ),
                ),
                (
                    "audit access report: one user",
                    auditor,
                    f"/console/audit/access-report?global_user_id={rel['global_user_id']}",
                ),
            ]
            print(f"# one API process, application role, c=1, {args.requests} requests per page")
            for name, cookie, path in pages:
                requests = [_get(path, cookie)]
                load(port, requests * 5, 1)  # warm
                run = load(port, requests * args.requests, 1)
                assert set(run.statuses) == {200}, (name, run.statuses)
                print(run.summary(name))
            print(
                json.dumps(
                    {"relationship": rid, "audit_rows": args.audit_rows, "memories": args.memories}
                )
            )


if __name__ == "__main__":
    main()
