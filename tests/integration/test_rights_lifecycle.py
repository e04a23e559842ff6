"""Tenant settings, complete erasure against a real worker, retention with backdated
rows (and a resumed sweep), and the ownership lifecycle seen from the operator's key."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from tenancy.relationships.directory import CardCache
from tenancy.relationships.lifecycle import pool_silent as pool_all
from tests.conftest import start_worker, stop_worker
from tests.support import resolve_body
from tether.core import task_queues
from tether.core.ids import TenantId
from tether.retention import sweep as retention
from workers.services import services_for

pytestmark = pytest.mark.integration
REASON = "用户来信要求删除 ticket 42"


async def _settings(client, tenant, change: dict, etag: str | None = None):
    if etag is None:
        etag = (await client.get("/v1/tenant/settings", headers=tenant.admin)).headers["etag"]
    return await client.put(
        "/v1/tenant/settings", json=change, headers=tenant.admin | {"If-Match": etag}
    )


async def _relationship(client, headers, user: str, persona: str = "p-1") -> dict:
    response = await client.post("/v1/resolve", json=resolve_body(user, persona), headers=headers)
    assert response.status_code in (200, 201), response.text
    return response.json()


async def test_settings_are_versioned_validated_and_audited(client, make_tenant) -> None:
    tenant, other = await make_tenant(), await make_tenant()
    first = await client.get("/v1/tenant/settings", headers=tenant.admin)
    assert first.status_code == 200
    assert first.headers["etag"] == '"0"'
    assert first.json()["ownership"]["creator_silence_hours"] == 72
    change = {"retention": {"raw_turns_days": 30, "memory_type_days": {"event": 7}}}
    missing = await client.put("/v1/tenant/settings", json=change, headers=tenant.admin)
    assert missing.status_code == 428
    for bad in (
        {"retention": {"raw_turns_days": 0}},
        {"retention": {"memory_type_days": {"梦想": 3}}},
        {"ownership": {"creator_silence_hours": "三天"}},
        {"budgets": {}},
    ):
        refused = await _settings(client, tenant, bad)
        assert refused.status_code == 422, refused.text
        assert refused.headers["content-type"].startswith("application/problem+json")
    written = await _settings(client, tenant, change | {"reason": "GDPR 数据最小化"})
    assert written.status_code == 200, written.text
    assert written.headers["etag"] == '"1"'
    assert written.json()["retention"]["raw_turns_days"] == 30
    stale = await _settings(client, tenant, change, etag='"0"')
    assert stale.status_code == 412
    audit = await client.get(
        "/v1/audit", params={"action": "settings.update"}, headers=tenant.admin
    )
    [event] = audit.json()["items"]
    assert event["detail"]["sections"] == ["retention"]
    mine = (await client.get("/v1/tenant/settings", headers=other.admin)).json()
    assert mine["version"] == 0  # tenant B never sees tenant A's settings
    assert mine["retention"]["raw_turns_days"] is None


async def test_a_turn_queued_before_erasure_writes_nothing_after_it(
    client, make_tenant, settings, resources, superuser
) -> None:
    tenant = await make_tenant()
    gateway, compliance = await tenant.key("gateway"), await tenant.key("compliance")
    marker = f"okapi-{uuid.uuid4().hex[:10]}"
    rel = await _relationship(client, gateway, f"erase-{marker}")
    rid, user = rel["relationship_id"], rel["global_user_id"]
    turns = {"turns": [{"session_id": "s", "role": "user", "text": f"我的暗号是 {marker}"}]}
    accepted = await client.post(f"/v1/relationships/{rid}/turns", json=turns, headers=gateway)
    assert accepted.status_code == 202, accepted.text
    # The persist message as it waits (a worker could hold it unacked or get it redelivered).
    queued = [
        raw for raw in await resources.redis.lrange(task_queues.TURNS, 0, -1) if rid.encode() in raw
    ]
    assert queued
    no_reason = await client.post(f"/v1/users/{user}/erasure", json={}, headers=compliance)
    assert no_reason.status_code == 422
    erased = await client.post(
        f"/v1/users/{user}/erasure", json={"reason": REASON}, headers=compliance
    )
    assert erased.status_code == 200, erased.text
    receipt = erased.json()
    assert receipt["relationships"] == 1
    assert receipt["stores"]["global_users"] == 1
    assert receipt["stores"]["relationships"] == 1
    assert receipt["stores"]["queued_tasks"] >= 1
    assert receipt["stores"]["redis_caches"] >= 1  # working memory, dedup keys, card
    # The message arrives after the erasure; then a real worker runs it, and a sentinel
    # turn of another user behind it shows the worker got past it.
    await resources.redis.rpush(task_queues.TURNS, *queued)
    sentinel = await _relationship(client, gateway, f"sentinel-{uuid.uuid4().hex[:8]}")
    body = {"turns": [{"session_id": "s", "role": "user", "text": "hello 你好"}]}
    await client.post(
        f"/v1/relationships/{sentinel['relationship_id']}/turns", json=body, headers=gateway
    )
    worker = start_worker(settings)
    try:
        for _ in range(300):
            listed = await client.get(
                f"/v1/relationships/{sentinel['relationship_id']}/turns", headers=gateway
            )
            if listed.json()["items"]:
                break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("the worker did not store the sentinel turn")
    finally:
        stop_worker(worker)
    async with superuser.connect() as conn:
        columns = await conn.execute(
            text(
                "SELECT c.table_name, c.column_name FROM information_schema.columns c"
                " JOIN pg_class p ON p.relname = c.table_name AND p.relkind IN ('r', 'p')"
                " WHERE c.table_schema = 'public'"
                " AND c.column_name IN ('relationship_id', 'global_user_id')"
            )
        )
        for table, column in columns:
            if table in ("audit_events", "audit_access_events", "erasure_tombstones"):
                continue  # ids only, by design (docs/compliance-rights.md)
            hits = await conn.scalar(
                text(f'SELECT count(*) FROM "{table}" WHERE "{column}"::text IN (:r, :u)'),  # noqa: S608
                {"r": rid, "u": user},
            )
            assert hits == 0, f"{table}.{column} holds the erased user's rows"
        tables = await conn.execute(
            text(
                "SELECT relname FROM pg_class WHERE relkind IN ('r', 'p')"
                " AND relnamespace = 'public'::regnamespace"
            )
        )
        for (table,) in tables:
            hits = await conn.scalar(
                text(f'SELECT count(*) FROM "{table}" t WHERE t::text LIKE :m'),  # noqa: S608
                {"m": f"%{marker}%"},
            )
            assert hits == 0, f"{table} holds the erased user's words"
        assert await conn.scalar(
            text("SELECT count(*) FROM erasure_tombstones WHERE relationship_id = :r"), {"r": rid}
        )
    for redis in (resources.redis, resources.hot_redis):
        async for key in redis.scan_iter(count=500):
            assert rid.encode() not in key, key
            assert user.encode() not in key, key
            if await redis.type(key) == b"string":
                assert marker.encode() not in (await redis.get(key) or b""), key
            elif await redis.type(key) == b"list":
                assert not any(marker.encode() in v for v in await redis.lrange(key, 0, -1)), key
    audit = await client.get("/v1/audit", params={"action": "erasure"}, headers=tenant.admin)
    [event] = audit.json()["items"]
    assert event["actor_role"] == "compliance"
    assert event["detail"]["reason"] == REASON
    assert marker not in str(event)


async def test_compliance_reports_access_and_exports_only_with_a_reason(
    client, make_tenant
) -> None:
    tenant = await make_tenant()
    gateway, compliance = await tenant.key("gateway"), await tenant.key("compliance")
    rel = await _relationship(client, gateway, f"report-{uuid.uuid4().hex[:8]}")
    rid, user = rel["relationship_id"], rel["global_user_id"]
    await client.post(
        f"/v1/relationships/{rid}/memories", json={"content": "喜欢爵士乐"}, headers=gateway
    )
    assert (await client.get(f"/v1/users/{user}/export", headers=compliance)).status_code == 400
    export = await client.get(
        f"/v1/users/{user}/export", params={"reason": "subject access request"}, headers=compliance
    )
    assert export.status_code == 200
    assert "喜欢爵士乐" in export.text  # what its own export returns, and only that:
    listed = await client.get(f"/v1/relationships/{rid}/memories", headers=compliance)
    assert listed.status_code == 403
    report = await client.get(f"/v1/users/{user}/access-report", headers=compliance)
    assert report.status_code == 200, report.text
    actions = {(e["action"], e["actor_role"]) for e in report.json()["items"]}
    assert ("export", "compliance") in actions
    other = await make_tenant()
    elsewhere = await client.get(f"/v1/users/{user}/access-report", headers=other.admin)
    assert elsewhere.status_code == 404


async def _backdate(superuser, sql: str, **params: object) -> None:
    async with superuser.begin() as conn:
        await conn.execute(text(sql), params)


async def test_retention_purges_old_turns_and_expires_old_memories_resumably(
    client, make_tenant, resources, superuser
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rel = await _relationship(client, gateway, f"retain-{uuid.uuid4().hex[:8]}")
    rid, tid = rel["relationship_id"], tenant.id
    old, now = datetime.now(UTC) - timedelta(days=40), datetime.now(UTC)
    for i in range(5):  # backdated raw turns, and one recent one that stays
        await _backdate(
            superuser,
            "INSERT INTO turns (relationship_id, id, tenant_id, session_id, role, text, at)"
            " VALUES (:r, :i, :t, 's', 'user', :x, :at)",
            r=rid,
            i=uuid.uuid4(),
            t=tid,
            x=f"旧消息 old turn {i}",
            at=old,
        )
    await _backdate(
        superuser,
        "INSERT INTO turns (relationship_id, id, tenant_id, session_id, role, text, at)"
        " VALUES (:r, :i, :t, 's', 'user', 'new turn 新消息', :at)",
        r=rid,
        i=uuid.uuid4(),
        t=tid,
        at=now,
    )
    memories = [
        {"content": "Went hiking last spring 去年春天去爬山", "memory_type": "event"},
        {"content": "Prefers green tea 喜欢绿茶", "memory_type": "preference"},
    ]
    made = await client.post(
        f"/v1/relationships/{rid}/memories/batch", json={"memories": memories}, headers=gateway
    )
    assert made.status_code == 200, made.text
    await _backdate(
        superuser, "UPDATE memories SET created_at = :at WHERE relationship_id = :r", r=rid, at=old
    )
    change = {"retention": {"raw_turns_days": 30, "memory_type_days": {"event": 10}}}
    assert (await _settings(client, tenant, change)).status_code == 200
    invalidate = services_for(resources).versions.invalidate
    cutoff = now - timedelta(days=30)
    calls = 0

    async def interrupted(session, tenant_id, cutoff, limit):
        nonlocal calls
        calls += 1
        if calls == 2:
            raise ConnectionError("the worker died mid-sweep")
        return await retention.purge_turns(session, tenant_id, cutoff, limit)

    with pytest.raises(ConnectionError):
        await retention.run_kind(
            resources.sessions, TenantId(uuid.UUID(tid)), "raw_turns", cutoff, interrupted, 2
        )
    async with superuser.connect() as conn:
        run = (await conn.execute(text("SELECT * FROM retention_runs"))).mappings().one()
        assert (run["removed"], run["finished_at"]) == (2, None)
    removed = await retention.sweep_tenant(
        resources.sessions, TenantId(uuid.UUID(tid)), invalidate, now, batch=2
    )
    assert removed == {"raw_turns": 3, "memories:event": 1}  # resumed: 2 + 3, none twice
    listed = await client.get(f"/v1/relationships/{rid}/turns", headers=gateway)
    assert [t["text"] for t in listed.json()["items"]] == ["new turn 新消息"]
    active = await client.get(f"/v1/relationships/{rid}/memories", headers=gateway)
    assert [m["memory_type"] for m in active.json()["items"] if m["is_active"]] == ["preference"]
    audit = await client.get(
        "/v1/audit", params={"action": "retention.sweep"}, headers=tenant.admin
    )
    details = {e["detail"]["kind"]: e["detail"]["removed"] for e in audit.json()["items"]}
    assert details == {"raw_turns": 5, "memories:event": 1}
    runs = await client.get("/v1/tenant/retention-runs", headers=tenant.admin)
    progress = {r["kind"]: (r["removed"], r["batches"]) for r in runs.json()["items"]}
    assert progress == {"raw_turns": (5, 3), "memories:event": (1, 1)}
    assert all(r["finished_at"] for r in runs.json()["items"])


async def pool_silent(resources, now: datetime) -> int:
    cards = CardCache(resources.redis, resources.settings.identity.card_ttl_seconds)
    return await pool_all(resources.sessions, cards, now)


async def _memory(client, headers, rid: str, content: str, **extra: object) -> str:
    made = await client.post(
        f"/v1/relationships/{rid}/memories", json={"content": content, **extra}, headers=headers
    )
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


async def test_a_silent_creator_hands_over_to_the_pool_within_the_inheritance_boundary(
    client, make_tenant, resources, superuser
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    creator = await tenant.key("creator", "c-1")
    pool = await tenant.key("operator", "night-shift")
    change = {"ownership": {"creator_silence_hours": 48, "pool_operator_id": "night-shift"}}
    assert (await _settings(client, tenant, change)).status_code == 200
    rel = await _relationship(client, gateway, f"lonely-{uuid.uuid4().hex[:8]}")
    rid = rel["relationship_id"]
    semantic = await _memory(client, creator, rid, "The user keeps bees 用户养蜜蜂")
    episodic = await _memory(client, creator, rid, "昨天聊了蜂蜜 talked honey", layer="episodic")
    private = await _memory(
        client, creator, rid, "Creator note: 用户容易焦虑", private_to_creator=True
    )
    chosen = await client.put(
        f"/v1/relationships/{rid}/pool-inheritance", json={"layers": ["semantic"]}, headers=creator
    )
    assert chosen.status_code == 200, chosen.text
    refused = await client.put(
        f"/v1/relationships/{rid}/pool-inheritance", json={"layers": ["梦"]}, headers=creator
    )
    assert refused.status_code == 422
    now = datetime.now(UTC)
    await _backdate(  # the user wrote 50 hours ago and the creator never answered
        superuser,
        "UPDATE relationships SET last_user_turn_at = :at WHERE id = :r",
        r=rid,
        at=now - timedelta(hours=50),
    )
    assert (await client.get(f"/v1/relationships/{rid}", headers=pool)).status_code == 404
    assert await pool_silent(resources, now) >= 1
    events = await client.get(f"/v1/relationships/{rid}/ownership-events", headers=creator)
    [moved] = events.json()["items"]
    assert (moved["to_kind"], moved["to_id"], moved["reason"]) == (
        "pool",
        "night-shift",
        "creator_silence",
    )
    listed = await client.get(f"/v1/relationships/{rid}/memories", headers=pool)
    assert listed.status_code == 200, listed.text
    assert [m["id"] for m in listed.json()["items"]] == [semantic], listed.json()["items"]
    for hidden in (episodic, private):
        for path in ("", "/history", "/sources"):  # every read of a memory, not only get
            got = await client.get(f"/v1/relationships/{rid}/memories/{hidden}{path}", headers=pool)
            assert got.status_code == 404, (path, got.text)
    # The conflict log carries candidates' text: a record about a withheld memory is
    # as withheld as the memory.
    for about in (semantic, episodic, private):
        await _backdate(
            superuser,
            "INSERT INTO consolidation_log (relationship_id, id, tenant_id, outcome, "
            "candidate, result_memory_id, reason) SELECT id, gen_random_uuid(), tenant_id, "
            "'created', CAST(:c AS jsonb), :m, 'new' FROM relationships WHERE id = :r",
            r=rid,
            m=about,
            c=json.dumps({"content": f"about {about}"}),
        )
    log = await client.get(f"/v1/relationships/{rid}/consolidations", headers=pool)
    assert log.status_code == 200, log.text
    assert [r["result_memory_id"] for r in log.json()["items"]] == [semantic], log.json()
    everything = await client.get(f"/v1/relationships/{rid}/consolidations", headers=creator)
    assert len(everything.json()["items"]) == 3
    found = await client.post(
        f"/v1/relationships/{rid}/search", json={"query": "蜜蜂 蜂蜜 bees honey"}, headers=pool
    )
    assert {h["id"] for h in found.json()["items"]} == {semantic}
    context = await client.post(
        "/v1/context", json={"relationship_id": rid, "query": "蜂蜜 焦虑"}, headers=pool
    )
    assert "焦虑" not in context.json()["context"]
    assert "昨天聊了蜂蜜" not in context.json()["context"]
    # The creator comes back: a turn with the creator's own key hands it back.
    turn = {"turns": [{"session_id": "s", "role": "assistant", "text": "I'm back! 我回来了"}]}
    back = await client.post(f"/v1/relationships/{rid}/turns", json=turn, headers=creator)
    assert back.status_code == 202, back.text
    reasons = await client.get(f"/v1/relationships/{rid}/ownership-events", headers=creator)
    assert [e["reason"] for e in reasons.json()["items"]] == ["creator_silence", "creator_returned"]
    assert (await client.get(f"/v1/relationships/{rid}", headers=pool)).status_code == 404
    assert await pool_silent(resources, now) == 0  # answered since: it stays
    audit = await client.get(
        "/v1/audit",
        params={"action": "ownership.transfer", "relationship_id": rid},
        headers=tenant.admin,
    )
    assert [e["detail"]["automatic"] for e in audit.json()["items"]] == [True, False]
