"""Policy and compliance through the real API: the hash-chained audit log (and what
tampering does to it), consent-gated global profile, forgetting, export, erasure, and
row-level security as the second lock."""

from __future__ import annotations

import itertools
import json
import uuid

import httpx
import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import DBAPIError

from tests.support import owner_sessions, resolve_body, wait_for_hot_copy
from tether.core.database import TENANT_INFO, create_engine, create_session_factory
from tether.core.resources import Resources
from tether.profiles.consent_cache import consent_key
from tether.rights import erasure

pytestmark = pytest.mark.integration


async def _relationship(
    client: httpx.AsyncClient, headers: dict[str, str], user: str, persona: str = "p-1"
) -> dict:
    response = await client.post("/v1/resolve", json=resolve_body(user, persona), headers=headers)
    assert response.status_code in (200, 201), response.text
    return response.json()


async def _audit(client, tenant, **params) -> list[dict]:
    response = await client.get("/v1/audit", params={"limit": 200, **params}, headers=tenant.admin)
    assert response.status_code == 200, response.text
    return response.json()["items"]


async def test_audited_actions_and_denials_form_a_verifiable_chain(client, make_tenant) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    denied = await client.get("/v1/audit", headers=gateway)
    assert denied.status_code == 403
    events = await _audit(client, tenant)
    assert [e["action"] for e in events][:2] == ["key.issue", "key.issue"]  # admin, gateway
    deny = next(e for e in events if e["decision"] == "deny")
    assert deny["actor_role"] == "gateway"
    assert deny["object"] == "audit"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert all(e["prev_hash"] == p["hash"] for p, e in itertools.pairwise(events))
    verify = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert verify == {"ok": True, "checked": len(events)}
    compliance = await tenant.key("compliance")
    assert (await client.get("/v1/audit/verify", headers=compliance)).status_code == 200
    export = await client.get("/v1/audit/export", headers=compliance)
    *lines, trailer = [json.loads(line) for line in export.text.splitlines()]
    assert [line["id"] for line in lines] == [e["id"] for e in await _audit(client, tenant)]
    assert trailer["trailer"]["count"] == len(lines)  # signed (test_audit_export.py)


async def test_tampering_with_the_audit_log_is_detected(client, make_tenant, superuser) -> None:
    tenant = await make_tenant()
    await tenant.key("gateway")
    await tenant.key("creator", "c-1")
    events = await _audit(client, tenant)
    target = events[1]["id"]
    async with superuser.connect() as conn:
        # The trigger refuses changes even to the owner...
        with pytest.raises(DBAPIError, match="append-only"):
            await conn.execute(
                text("UPDATE audit_events SET action = 'x' WHERE id = :i"), {"i": target}
            )
        await conn.rollback()
        # ...so a forger must switch triggers off first (superuser only).
        await conn.execute(text("SET session_replication_role = replica"))
        await conn.execute(
            text("UPDATE audit_events SET actor_subject = 'someone-else' WHERE id = :i"),
            {"i": target},
        )
        await conn.commit()
    verify = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert verify["ok"] is False
    assert verify["first_bad_id"] == target
    assert "changed" in verify["reason"]


async def test_a_removed_audit_row_is_detected(client, make_tenant, superuser) -> None:
    tenant = await make_tenant()
    await tenant.key("gateway")
    await tenant.key("operator", "pool-1")
    events = await _audit(client, tenant)
    async with superuser.connect() as conn:
        await conn.execute(text("SET session_replication_role = replica"))
        await conn.execute(text("DELETE FROM audit_events WHERE id = :i"), {"i": events[1]["id"]})
        await conn.commit()
    verify = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert verify["ok"] is False
    assert verify["first_bad_id"] == events[2]["id"]


async def test_the_application_role_cannot_change_audit_rows(
    client, make_tenant, resources: Resources
) -> None:
    tenant = await make_tenant()
    async with resources.engine.connect() as conn:
        role = await conn.scalar(text("SELECT current_user"))
        assert role == "tether_app"
        with pytest.raises(DBAPIError, match="permission denied"):
            await conn.execute(
                text("DELETE FROM audit_events WHERE tenant_id = :t"), {"t": tenant.id}
            )


async def test_ownership_transfers_are_audited(client, make_tenant) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rel = await _relationship(client, gateway, "transfer")
    body = {"to": {"kind": "pool", "id": "pool-9"}, "reason": "creator on leave"}
    response = await client.post(
        f"/v1/relationships/{rel['relationship_id']}/transfer", json=body, headers=tenant.admin
    )
    assert response.status_code in (200, 201), response.text
    [event] = await _audit(client, tenant, action="ownership.transfer")
    assert event["relationship_id"] == rel["relationship_id"]


async def test_policy_check_explains_decisions(client, make_tenant) -> None:
    tenant = await make_tenant()
    compliance = await tenant.key("compliance")
    allowed = (
        await client.post(
            "/v1/policies/check",
            json={"role": "gateway", "object": "relationship_memory", "action": "read"},
            headers=compliance,
        )
    ).json()
    assert allowed["allowed"] is True
    assert allowed["matched_rule"] == ["gateway", "relationship_memory", "read", "allow"]
    denied = (
        await client.post(
            "/v1/policies/check",
            json={"role": "operator", "object": "relationship_memory:private", "action": "read"},
            headers=compliance,
        )
    ).json()
    assert denied["allowed"] is False
    assert "deny" in denied["explanation"]
    default = (
        await client.post(
            "/v1/policies/check",
            json={"role": "compliance", "object": "relationship_memory", "action": "read"},
            headers=compliance,
        )
    ).json()
    assert default["allowed"] is False
    assert "no rule" in default["explanation"]


async def test_global_profile_needs_policy_and_consent(client, make_tenant) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    a = await _relationship(client, gateway, "consent", persona="persona-a")
    b = await _relationship(client, gateway, "consent", persona="persona-b")
    user = a["global_user_id"]
    # Learned in relationship B: a memory (never shared) and a profile field.
    await client.post(
        f"/v1/relationships/{b['relationship_id']}/memories",
        json={"content": "The user confided a secret about their job in B"},
        headers=gateway,
    )
    field = {"value": "zh-CN", "scope": "profile", "source_relationship_id": b["relationship_id"]}
    assert (
        await client.put(f"/v1/users/{user}/profile/fields/language", json=field, headers=gateway)
    ).status_code == 200
    tier = {"value": "T-07", "scope": "spending"}
    await client.put(f"/v1/users/{user}/profile/fields/spending_tier", json=tier, headers=gateway)

    def context_of(rel: dict) -> dict:
        return {"relationship_id": rel["relationship_id"], "query": "job secret language"}

    before = (await client.post("/v1/context", json=context_of(a), headers=gateway)).json()[
        "context"
    ]
    assert "zh-CN" not in before  # no consent: no cross-talk
    assert "secret" not in before
    profile = (await client.get(f"/v1/users/{user}/profile", headers=gateway)).json()
    assert profile["fields"] == []
    assert set(profile["withheld"]) == {"language", "spending_tier"}
    consent = await client.put(
        f"/v1/users/{user}/consent",
        json={"scopes": ["profile"], "source": "app settings"},
        headers=gateway,
    )
    assert consent.json()["current"]["scopes"] == ["profile"]
    profile = (await client.get(f"/v1/users/{user}/profile", headers=gateway)).json()
    assert [f["field"] for f in profile["fields"]] == ["language"]
    after = (await client.post("/v1/context", json=context_of(a), headers=gateway)).json()[
        "context"
    ]
    assert '"language: zh-CN"' in after
    assert "T-07" not in after  # no consent for spending
    assert "secret" not in after  # memories never cross relationships
    creator = await tenant.key("creator", "c-1")
    assert (await client.get(f"/v1/users/{user}/profile", headers=creator)).status_code == 403
    await client.put(
        f"/v1/users/{user}/consent", json={"scopes": [], "source": "user withdrew"}, headers=gateway
    )
    withdrawn = (await client.post("/v1/context", json=context_of(a), headers=gateway)).json()[
        "context"
    ]
    assert "zh-CN" not in withdrawn
    history = (await client.get(f"/v1/users/{user}/consent", headers=gateway)).json()["history"]
    assert [h["withdrawn"] for h in history] == [True, False]
    reads = await _audit(client, tenant, action="profile.read")
    assert any(
        e["object"] == "global_user_profile:aggregate"
        and e["relationship_id"] == a["relationship_id"]
        for e in reads
    )
    assert any(
        e["actor_role"] == "creator" and e["decision"] == "deny"
        for e in await _audit(client, tenant, decision="deny")
    )


async def test_forget_previews_then_forgets_exactly_those(client, make_tenant, resources) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid = (await _relationship(client, gateway, "forget"))["relationship_id"]
    memories = [
        "The user's ex is called Sam",
        "Sam and the user broke up in May",
        "The user likes tea",
    ]
    await client.post(
        f"/v1/relationships/{rid}/memories/batch",
        json={"memories": [{"content": m} for m in memories]},
        headers=gateway,
    )
    search = f"/v1/relationships/{rid}/search"
    assert (
        len(
            (await client.post(search, json={"query": "Sam", "k": 10}, headers=gateway)).json()[
                "items"
            ]
        )
        == 2
    )
    preview = (
        await client.post(
            f"/v1/relationships/{rid}/forget", json={"query": "Sam", "hard": True}, headers=gateway
        )
    ).json()
    assert sorted(m["content"] for m in preview["memories"]) == sorted(memories[:2])
    assert (
        len((await client.post(search, json={"query": "Sam"}, headers=gateway)).json()["items"])
        == 2
    )  # nothing yet
    other_key = await tenant.key("gateway")
    stolen = await client.post(
        f"/v1/relationships/{rid}/forget/confirm",
        json={"token": preview["token"]},
        headers=other_key,
    )
    assert stolen.status_code == 404  # a token works only for the key that asked
    confirm = await client.post(
        f"/v1/relationships/{rid}/forget/confirm", json={"token": preview["token"]}, headers=gateway
    )
    assert confirm.status_code == 404  # and only once: the stolen attempt consumed it
    preview = (
        await client.post(
            f"/v1/relationships/{rid}/forget", json={"query": "Sam", "hard": True}, headers=gateway
        )
    ).json()
    done = (
        await client.post(
            f"/v1/relationships/{rid}/forget/confirm",
            json={"token": preview["token"]},
            headers=gateway,
        )
    ).json()
    assert done == {"forgotten": 2, "hard": True}
    after = (await client.post(search, json={"query": "Sam"}, headers=gateway)).json()["items"]
    # Nothing matches any more; what a plain question still gets is marked not relevant.
    assert [h for h in after if h["explanation"]["relevant"]] == []
    assert all("Sam" not in h["content"] for h in after)
    assert [
        r["content"]
        for r in (await client.post(search, json={"query": "tea"}, headers=gateway)).json()["items"]
    ] == ["The user likes tea"]
    async with owner_sessions(resources)() as session:
        leftover = await session.scalar(
            text("SELECT count(*) FROM memories WHERE content LIKE '%Sam%'")
        )
        versions = await session.scalar(
            text("SELECT count(*) FROM memory_versions WHERE snapshot::text LIKE '%Sam%'")
        )
    assert leftover == 0
    assert versions == 0
    [event] = await _audit(client, tenant, action="forget")
    assert "Sam" not in json.dumps(event)


async def test_export_streams_everything_about_a_user(client, make_tenant) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rel = await _relationship(client, gateway, "export")
    rid, user = rel["relationship_id"], rel["global_user_id"]
    await client.post(
        f"/v1/relationships/{rid}/memories", json={"content": "用户喜欢猫"}, headers=gateway
    )
    await client.put(
        f"/v1/users/{user}/consent",
        json={"scopes": ["profile"], "source": "signup"},
        headers=gateway,
    )
    response = await client.get(f"/v1/users/{user}/export", headers=gateway)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in response.text.splitlines()]
    kinds = {line["kind"] for line in lines}
    assert {"user", "facet", "relationship", "memory", "memory_version", "consent"} <= kinds
    assert any(line["kind"] == "memory" and line["content"] == "用户喜欢猫" for line in lines)
    assert all("embedding" not in line for line in lines)
    assert await _audit(client, tenant, action="export")


async def test_erasure_leaves_nothing_of_the_user_in_postgres_or_redis(
    client, make_tenant, resources, superuser
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    marker = f"zebra-{uuid.uuid4().hex[:10]}"
    rel = await _relationship(client, gateway, f"erase-{marker}")
    rid, user = rel["relationship_id"], rel["global_user_id"]
    await client.post(
        f"/v1/relationships/{rid}/memories",
        json={"content": f"The user's secret word is {marker}"},
        headers=gateway,
    )
    turns = {"turns": [{"session_id": "s", "role": "user", "text": f"remember {marker} please"}]}
    await client.post(f"/v1/relationships/{rid}/turns", json=turns, headers=gateway)
    await client.post(
        f"/v1/relationships/{rid}/search", json={"query": marker}, headers=gateway
    )  # fill the hot tier
    await client.put(
        f"/v1/users/{user}/profile/fields/nickname",
        json={"value": marker, "scope": "profile"},
        headers=gateway,
    )
    await client.put(
        f"/v1/users/{user}/consent", json={"scopes": ["profile"], "source": "t"}, headers=gateway
    )
    context = await client.post(
        "/v1/context", json={"relationship_id": rid, "query": marker}, headers=gateway
    )  # fills the card, consent and partition caches
    assert marker in context.json()["context"]
    await wait_for_hot_copy(resources.hot_redis, rid)  # no fill lands after the erasure
    assert await resources.redis.exists(consent_key(uuid.UUID(tenant.id), uuid.UUID(user)))
    assert (
        await client.delete(f"/v1/users/{user}", headers=gateway)
    ).status_code == 403  # admin only
    erased = await client.delete(f"/v1/users/{user}", headers=tenant.admin)
    assert erased.status_code == 200, erased.text
    receipt = erased.json()
    assert (receipt["global_user_id"], receipt["relationships"], receipt["erased"]) == (
        user,
        1,
        True,
    )
    assert receipt["stores"]["memories"] == 1
    assert receipt["stores"]["consent_records"] == 1
    assert receipt["stores"]["redis_hot_partitions"] >= 1
    async with superuser.connect() as conn:
        tables = (
            (
                await conn.execute(
                    text(
                        "SELECT relname FROM pg_class WHERE relkind IN ('r', 'p')"
                        " AND relnamespace = 'public'::regnamespace"
                    )
                )
            )
            .scalars()
            .all()
        )
        for table in tables:
            hits = await conn.scalar(
                text(f'SELECT count(*) FROM "{table}" t WHERE t::text LIKE :m'),  # noqa: S608
                {"m": f"%{marker}%"},
            )
            assert hits == 0, f"{table} still holds the erased user's data"
    for redis in (resources.redis, resources.hot_redis):  # the hot tier's Redis too
        for key in await redis.keys("*"):
            kind = await redis.type(key)
            values = (
                [await redis.get(key)]
                if kind == b"string"
                else (await redis.lrange(key, 0, -1) if kind == b"list" else [])
            )
            assert not any(v and marker.encode() in v for v in values), key
            assert user.encode() not in key, key
            assert rid.encode() not in key, key
    assert (
        await client.get(f"/v1/relationships/{rid}/memories", headers=gateway)
    ).status_code == 404
    [event] = await _audit(client, tenant, action="erasure")
    assert marker not in json.dumps(event)


async def test_erasure_deletes_the_largest_tables_page_by_page(
    client, make_tenant, resources, monkeypatch
) -> None:
    # One cascade over a heavy user's rows would outlast the statement timeout on every
    # try; each statement deletes at most ERASE_PAGE rows of a relationship.
    monkeypatch.setattr(erasure, "ERASE_PAGE", 2)
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rel = await _relationship(client, gateway, f"erase-pages-{uuid.uuid4().hex[:8]}")
    rid, user = rel["relationship_id"], rel["global_user_id"]
    body = {"memories": [{"content": f"分页删除的记忆 memory {i}"} for i in range(5)]}
    created = await client.post(
        f"/v1/relationships/{rid}/memories/batch", json=body, headers=gateway
    )
    assert created.status_code == 200, created.text
    statements: list[str] = []

    def seen(_conn, _cursor, statement, *_: object) -> None:
        statements.append(statement)

    event.listen(resources.engine.sync_engine, "before_cursor_execute", seen)
    try:
        erased = await client.delete(f"/v1/users/{user}", headers=tenant.admin)
    finally:
        event.remove(resources.engine.sync_engine, "before_cursor_execute", seen)
    assert erased.status_code == 200, erased.text
    pages = [s for s in statements if s.lstrip().startswith("DELETE FROM memories ")]
    assert len(pages) == 3  # 2 + 2 + 1: the short page ends it
    assert (
        await client.get(f"/v1/relationships/{rid}/memories", headers=gateway)
    ).status_code == 404


async def test_row_level_security_hides_other_tenants_even_without_a_filter(
    client, make_tenant, settings
) -> None:
    a, b = await make_tenant(), await make_tenant()
    for tenant, user in ((a, "rls-a"), (b, "rls-b")):
        gateway = await tenant.key("gateway")
        rid = (await _relationship(client, gateway, user))["relationship_id"]
        await client.post(
            f"/v1/relationships/{rid}/memories",
            json={"content": f"memory of {user}"},
            headers=gateway,
        )
    engine = create_engine(settings)
    sessions = create_session_factory(engine)
    try:
        async with sessions() as session:
            session.info[TENANT_INFO] = a.id
            # A query that "forgot" its tenant filter:
            contents = (await session.execute(text("SELECT content FROM memories"))).scalars().all()
        assert contents == ["memory of rls-a"]
        async with sessions() as session:
            assert (await session.execute(text("SELECT count(*) FROM memories"))).scalar_one() == 0
        async with sessions() as session:
            session.info[TENANT_INFO] = a.id
            with pytest.raises(DBAPIError, match="row-level security"):
                await session.execute(
                    text("UPDATE memories SET tenant_id = :b WHERE content = 'memory of rls-a'"),
                    {"b": b.id},
                )
    finally:
        await engine.dispose()
