"""POST/GET turns without a worker: validation, dedup, idempotency, privacy, the
working memory, privacy modes, and the no-Postgres rule of the request path."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import msgspec
import pytest
from sqlalchemy import func, select

from tenancy.ids import RelationshipId, RelationshipScope
from tests.support import count_sql, owner_sessions, redis_down_client, resolve_body
from tether.core import task_queues
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.turns.claims import WorkingMemoryEntry, working_memory_key
from tether.turns.models import Turn

pytestmark = pytest.mark.integration


async def _relationship(client: httpx.AsyncClient, headers: dict[str, str], user: str) -> str:
    response = await client.post("/v1/resolve", json=resolve_body(user), headers=headers)
    assert response.status_code in (200, 201), response.text
    return str(response.json()["relationship_id"])


def turn(text: str, session: str = "s-1", role: str = "user", **extra: object) -> dict[str, object]:
    return {"session_id": session, "role": role, "text": text, **extra}


async def _working_memory(
    resources: Resources, tenant_id: str, rid: str
) -> list[WorkingMemoryEntry]:
    scope = RelationshipScope(TenantId(uuid.UUID(tenant_id)), RelationshipId(uuid.UUID(rid)))
    raw = await resources.redis.lrange(working_memory_key(scope), 0, -1)
    return [msgspec.msgpack.decode(item, type=WorkingMemoryEntry) for item in raw]


async def _stored(resources: Resources, rid: str) -> int:
    async with owner_sessions(resources)() as session:
        statement = select(func.count()).where(Turn.relationship_id == uuid.UUID(rid))
        return int((await session.execute(statement)).scalar_one())


@pytest.fixture(scope="module")
async def gateway(make_tenant):  # type: ignore[no-untyped-def]
    tenant = await make_tenant()
    return tenant, await tenant.key("gateway")


async def test_a_batch_is_accepted_with_one_result_per_turn(client, gateway) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "accept")
    body = {"turns": [turn("我喜欢吃辣"), turn("好的，记住了", role="assistant")]}
    response = await client.post(f"/v1/relationships/{rid}/turns", json=body, headers=headers)
    assert response.status_code == 202, response.text
    result = response.json()
    assert [r["status"] for r in result["results"]] == ["accepted", "accepted"]
    assert [r["index"] for r in result["results"]] == [0, 1]
    assert all(uuid.UUID(r["turn_id"]) for r in result["results"])
    assert result["stored"] is True
    assert result["degraded"] == []


async def test_the_request_path_runs_no_sql_once_the_card_is_cached(
    client, gateway, resources: Resources
) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "nosql")
    first = {"turns": [turn("warm the caches")]}
    await client.post(f"/v1/relationships/{rid}/turns", json=first, headers=headers)
    with count_sql(resources) as statements:
        body = {"turns": [turn(f"message {i}") for i in range(20)]}
        response = await client.post(f"/v1/relationships/{rid}/turns", json=body, headers=headers)
    assert response.status_code == 202
    assert statements == []


async def test_same_text_within_the_window_is_a_duplicate_of_the_first(client, gateway) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "dedup")
    url = f"/v1/relationships/{rid}/turns"
    first = (
        await client.post(url, json={"turns": [turn("I love hiking")]}, headers=headers)
    ).json()
    # Spacing, case and full-width forms do not make a turn new.
    again = await client.post(url, json={"turns": [turn("  i  LOVE hiking ")]}, headers=headers)
    original = first["results"][0]["turn_id"]
    assert again.json()["results"][0] == {
        "index": 0,
        "status": "duplicate",
        "turn_id": original,
        "masked": [],
    }
    # The same words said by the other role are a different turn.
    other = await client.post(
        url, json={"turns": [turn("I love hiking", role="assistant")]}, headers=headers
    )
    assert other.json()["results"][0]["status"] == "accepted"


async def test_duplicates_inside_one_batch_point_at_the_first(client, gateway) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "inbatch")
    body = {"turns": [turn("hello there"), turn("hello there")]}
    results = (
        await client.post(f"/v1/relationships/{rid}/turns", json=body, headers=headers)
    ).json()["results"]
    assert results[0]["status"] == "accepted"
    assert results[1] == {
        "index": 1,
        "status": "duplicate",
        "turn_id": results[0]["turn_id"],
        "masked": [],
    }


async def test_a_retried_idempotency_key_returns_the_original_turn(
    client, gateway, resources
) -> None:
    tenant, headers = gateway
    rid = await _relationship(client, headers, "idem")
    url = f"/v1/relationships/{rid}/turns"
    body = {"turns": [turn("first words", idempotency_key="k-1")]}
    first = (await client.post(url, json=body, headers=headers)).json()["results"][0]
    # A retry after the dedup window (simulated by dropping the content keys) still
    # answers from the idempotency key, even with edited text.
    for key in await resources.redis.keys("tether:dd:*"):
        await resources.redis.delete(key)
    retry = {"turns": [turn("first words, edited", idempotency_key="k-1")]}
    again = (await client.post(url, json=retry, headers=headers)).json()["results"][0]
    assert again["status"] == "duplicate"
    assert again["turn_id"] == first["turn_id"]
    assert len(await _working_memory(resources, tenant.id, rid)) == 1


async def test_personal_data_is_masked_before_redis(client, gateway, resources) -> None:
    tenant, headers = gateway
    rid = await _relationship(client, headers, "mask")
    text = "我的手机号是13812345678，邮箱 li.lei@example.com"
    body = {"turns": [turn(text)]}
    result = (
        await client.post(f"/v1/relationships/{rid}/turns", json=body, headers=headers)
    ).json()
    assert sorted(result["results"][0]["masked"]) == ["EMAIL", "PHONE"]
    [entry] = await _working_memory(resources, tenant.id, rid)
    assert "13812345678" not in entry.text
    assert "[PHONE]" in entry.text
    assert "[EMAIL]" in entry.text
    for key in await resources.redis.keys("*"):
        kind = await resources.redis.type(key)
        if kind == b"string":
            assert b"13812345678" not in (await resources.redis.get(key) or b"")
        elif kind == b"list":
            assert all(b"13812345678" not in v for v in await resources.redis.lrange(key, 0, -1))


async def test_working_memory_is_capped_newest_first(client, gateway, resources, settings) -> None:
    tenant, headers = gateway
    rid = await _relationship(client, headers, "cap")
    cap = settings.ingest.working_memory_turns
    url = f"/v1/relationships/{rid}/turns"
    for start in range(0, cap + 10, 20):
        body = {"turns": [turn(f"line {i}") for i in range(start, start + 20)]}
        assert (await client.post(url, json=body, headers=headers)).status_code == 202
    entries = await _working_memory(resources, tenant.id, rid)
    assert len(entries) == cap
    assert entries[0].text == f"line {((cap + 10 + 19) // 20) * 20 - 1}"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"turns": []}, "turns"),
        ({"turns": [turn("x")] * 101}, "turns"),
        ({"turns": [turn("")]}, "turns[0].text"),
        ({"turns": [turn("   ")]}, "turns[0].text"),
        ({"turns": [turn("x" * 8001)]}, "turns[0].text"),
        ({"turns": [turn("a\x00b")]}, "turns[0].text"),
        ({"turns": [turn("ok"), turn("bad", role="system")]}, "turns[1].role"),
        ({"turns": [turn("ok", session="")]}, "turns[0].session_id"),
        ({"turns": [turn("ok", at="2999-01-01T00:00:00Z")]}, "turns[0].at"),
        ({"turns": [turn("ok", at="2026-01-01T00:00:00")]}, "turns[0].at"),
        ({"turns": [turn("ok", at="yesterday")]}, "turns[0].at"),
        ({"turns": [turn("ok", extra=1)]}, "turns[0].extra"),
        ({"turns": [turn(42)]}, "turns[0].text"),
        ({"turn": []}, "turn"),
    ],
)
async def test_bad_batches_are_422_naming_the_field_and_store_nothing(
    client, gateway, resources, body, field
) -> None:
    tenant, headers = gateway
    rid = await _relationship(client, headers, "bad")
    response = await client.post(f"/v1/relationships/{rid}/turns", json=body, headers=headers)
    assert response.status_code in (400, 422), response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    fields = [e["field"] for e in problem.get("errors", [])]
    assert any(f.startswith(field) or field.startswith(f) for f in fields), str(problem)
    assert await _working_memory(resources, tenant.id, rid) == []


async def test_a_batch_with_one_bad_turn_stores_none_of_it(client, gateway, resources) -> None:
    tenant, headers = gateway
    rid = await _relationship(client, headers, "allornothing")
    body = {"turns": [turn("fine"), turn("also fine"), turn("x" * 9000)]}
    response = await client.post(f"/v1/relationships/{rid}/turns", json=body, headers=headers)
    assert response.status_code == 422
    assert await _working_memory(resources, tenant.id, rid) == []
    # Nothing was claimed either: the same good turns are accepted afterwards.
    retry = {"turns": [turn("fine"), turn("also fine")]}
    again = await client.post(f"/v1/relationships/{rid}/turns", json=retry, headers=headers)
    assert [r["status"] for r in again.json()["results"]] == ["accepted", "accepted"]


async def test_invalid_utf8_and_lone_surrogates_are_refused(client, gateway) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "utf8")
    url = f"/v1/relationships/{rid}/turns"
    raw = b'{"turns": [{"session_id": "s", "role": "user", "text": "\xff\xfe"}]}'
    bad_bytes = await client.post(
        url, content=raw, headers=headers | {"content-type": "application/json"}
    )
    assert bad_bytes.status_code == 400
    surrogate = b'{"turns": [{"session_id": "s", "role": "user", "text": "a\\ud800b"}]}'
    lone = await client.post(
        url, content=surrogate, headers=headers | {"content-type": "application/json"}
    )
    assert lone.status_code in (400, 422)


async def test_unknown_and_foreign_relationships_are_404(client, gateway, make_tenant) -> None:
    _, headers = gateway
    other = await make_tenant()
    other_gateway = await other.key("gateway")
    foreign = await _relationship(client, other_gateway, "foreign")
    body = {"turns": [turn("hi")]}
    for rid in (str(uuid.uuid4()), foreign):
        response = await client.post(f"/v1/relationships/{rid}/turns", json=body, headers=headers)
        assert response.status_code == 404, response.text
        assert response.json()["code"] == "relationship_not_found"


async def test_privacy_off_drops_turns_and_says_so(client, gateway, resources) -> None:
    tenant, headers = gateway
    rid = await _relationship(client, headers, "off")
    patch = await client.patch(
        f"/v1/relationships/{rid}", json={"privacy_mode": "off"}, headers=tenant.admin
    )
    assert patch.status_code == 200, patch.text
    body = {"turns": [turn("do not keep this")]}
    result = (
        await client.post(f"/v1/relationships/{rid}/turns", json=body, headers=headers)
    ).json()
    assert result["stored"] is False
    assert result["results"][0]["status"] == "dropped"
    assert await _working_memory(resources, tenant.id, rid) == []


async def test_queue_down_stores_synchronously_and_says_so(
    client, gateway, resources, settings, tmp_path
) -> None:
    from tether.app import bind_resources, create_app, with_outer_middleware
    from tether.core.resources import open_resources

    _, headers = gateway
    rid = await _relationship(client, headers, "queue-down")
    broken = settings.model_copy(update={"broker_url": "redis://127.0.0.1:9/0"})
    app = create_app(broken)
    async with open_resources(broken) as down_resources:
        bind_resources(app, down_resources)
        transport = httpx.ASGITransport(app=with_outer_middleware(app))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as down:
            body = {"turns": [turn("kept despite the queue", idempotency_key="q-1"), turn("two")]}
            url = f"/v1/relationships/{rid}/turns"
            response = await down.post(url, json=body, headers=headers)
            assert response.status_code == 202, response.text
            assert response.json()["degraded"] == ["queue"]
            # Past the dedup window, the idempotency key is found in Postgres.
            for key in await resources.redis.keys("tether:*dd:*") + await resources.redis.keys(
                "tether:idem:*"
            ):
                await resources.redis.delete(key)
            again = await down.post(
                url, json={"turns": [turn("retry", idempotency_key="q-1")]}, headers=headers
            )
    assert again.json()["results"][0]["status"] == "duplicate"
    assert again.json()["results"][0]["turn_id"] == response.json()["results"][0]["turn_id"]
    assert await _stored(resources, rid) == 2
    listed = await client.get(f"/v1/relationships/{rid}/turns", headers=headers)
    assert [t["text"] for t in listed.json()["items"]] == ["kept despite the queue", "two"]


async def test_redis_down_still_accepts_turns_into_postgres(
    client, gateway, resources, settings, tmp_path
) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "redis-down")
    async with redis_down_client(settings, tmp_path) as down:
        body = {"turns": [turn("13812345678 is my number"), turn("still here")]}
        response = await down.post(f"/v1/relationships/{rid}/turns", json=body, headers=headers)
        end = await down.post(f"/v1/relationships/{rid}/sessions/s-1/end", headers=headers)
    assert response.status_code == 202, response.text
    assert "redis" in response.json()["degraded"]
    assert [r["status"] for r in response.json()["results"]] == ["accepted", "accepted"]
    assert end.status_code == 202
    listed = (await client.get(f"/v1/relationships/{rid}/turns", headers=headers)).json()["items"]
    assert [t["text"] for t in listed] == ["[PHONE] is my number", "still here"]


async def test_listing_turns_pages_and_filters_by_session(
    client, gateway, resources, settings
) -> None:
    from tether.core.tenant_sessions import tenant_transaction
    from tether.turns.pending import PendingTurn
    from tether.turns.services import store_turns

    tenant, headers = gateway
    rid = await _relationship(client, headers, "list")
    scope = RelationshipScope(TenantId(uuid.UUID(tenant.id)), RelationshipId(uuid.UUID(rid)))
    now = datetime.now(UTC)
    turns = [
        PendingTurn(
            uuid.UUID(int=i + 1),
            f"s-{i % 2}",
            "user",
            f"t{i}",
            now + timedelta(seconds=i),
            (),
            None,
        )
        for i in range(5)
    ]
    async with tenant_transaction(resources.sessions, scope.tenant_id) as session:
        await store_turns(session, scope, turns)
    url = f"/v1/relationships/{rid}/turns"
    first = (await client.get(url, params={"limit": 2}, headers=headers)).json()
    assert [t["text"] for t in first["items"]] == ["t0", "t1"]
    second = (
        await client.get(url, params={"limit": 2, "cursor": first["next_cursor"]}, headers=headers)
    ).json()
    assert [t["text"] for t in second["items"]] == ["t2", "t3"]
    only = (await client.get(url, params={"session_id": "s-1"}, headers=headers)).json()
    assert [t["text"] for t in only["items"]] == ["t1", "t3"]


async def test_tenant_privacy_patterns_mask_before_storage(client, make_tenant, resources) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    url = "/v1/tenant/privacy-patterns"
    body = {"patterns": [{"tag": "MEMBER_ID", "pattern": r"VIP-\d{6}"}]}
    put = await client.put(url, json=body, headers=tenant.admin)
    assert put.status_code == 200, put.text
    assert (await client.get(url, headers=tenant.admin)).json() == body | {
        "filter_documents": False
    }
    assert (await client.put(url, json=body, headers=headers)).status_code == 403
    bad = {"patterns": [{"tag": "OK", "pattern": "x"}, {"tag": "BAD", "pattern": r"(?<!\d)\d{6}"}]}
    refused = await client.put(url, json=bad, headers=tenant.admin)
    assert refused.status_code == 422
    problem = refused.json()
    assert problem["code"] == "invalid_privacy_pattern"
    assert problem["errors"][0]["field"] == "patterns[1].pattern"
    assert problem["errors"][0]["reason"] == "lookaround"
    assert (await client.get(url, headers=tenant.admin)).json() == body | {
        "filter_documents": False
    }
    # What Python's re backtracks on for seconds runs on RE2 in linear time: accepted.
    hostile = {"patterns": [{"tag": "EXP", "pattern": "(?:a?){28}a{28}"}]}
    assert (await client.put(url, json=hostile, headers=tenant.admin)).status_code == 200
    assert (await client.put(url, json=body, headers=tenant.admin)).status_code == 200
    rid = await _relationship(client, headers, "tenant-patterns")
    sent = {"turns": [turn("my member card is VIP-123456, order 20231107")]}
    result = (
        await client.post(f"/v1/relationships/{rid}/turns", json=sent, headers=headers)
    ).json()
    assert result["results"][0]["masked"] == ["MEMBER_ID"]
    [entry] = await _working_memory(resources, tenant.id, rid)
    assert entry.text == "my member card is [MEMBER_ID], order 20231107"


async def test_turns_whose_task_was_lost_are_stored_from_working_memory(
    client, gateway, resources
) -> None:
    from tether.turns.reconcile import reconcile

    _, headers = gateway
    rid = await _relationship(client, headers, "lost-task")
    body = {"turns": [turn("first of two"), turn("second of two")]}
    accepted = (
        await client.post(f"/v1/relationships/{rid}/turns", json=body, headers=headers)
    ).json()
    await resources.redis.delete(task_queues.TURNS)  # the persist task is lost (no worker)
    assert await _stored(resources, rid) == 0
    repaired = await reconcile(resources.sessions, resources.redis, older_than_seconds=-1, cap=50)
    assert repaired >= 2
    assert await _stored(resources, rid) == 2
    listed = (await client.get(f"/v1/relationships/{rid}/turns", headers=headers)).json()["items"]
    assert [t["id"] for t in listed] == [r["turn_id"] for r in accepted["results"]]
    again = await reconcile(resources.sessions, resources.redis, older_than_seconds=-1, cap=50)
    assert again == 0  # idempotent: nothing stored twice


async def test_hostile_tenant_patterns_do_not_stall_a_turn(client, make_tenant) -> None:
    """The two patterns the old vetting let through: a turn against each is answered
    promptly (the benchmark bench/pattern_lag.py measures the event loop's lag)."""
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    patterns = [
        {"tag": "EXP", "pattern": "(?:a?){28}a{28}"},
        {"tag": "POLY", "pattern": r"\d*\d*\d*!"},
    ]
    put = await client.put(
        "/v1/tenant/privacy-patterns", json={"patterns": patterns}, headers=tenant.admin
    )
    assert put.status_code == 200, put.text
    rid = await _relationship(client, headers, "hostile-patterns")
    for text in ("a" * 28, "1" * 400, "a" * 8000, "1" * 8000):
        started = time.perf_counter()
        sent = await client.post(
            f"/v1/relationships/{rid}/turns", json={"turns": [turn(text)]}, headers=headers
        )
        assert sent.status_code == 202, sent.text
        assert time.perf_counter() - started < 1.0  # generous: milliseconds, not seconds
