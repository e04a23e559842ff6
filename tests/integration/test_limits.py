"""Per-tenant limits through /v1/tenant/limits (up to the operator's allowance), quotas
(turns per day, memories, knowledge bytes) answered 429 with Retry-After and the
RateLimit fields, and service when Redis is away (real Postgres and Redis). Request
rates: test_rate_limits.py."""

from __future__ import annotations

from typing import Any

import httpx

from tenancy.limits.services import TenantLimitsService
from tenancy.limits.values import LimitName
from tests.support import app_client, resolved_relationship
from tether.core.ids import TenantId
from tether.core.tenant_sessions import tenant_transaction

LIMITS = "/v1/tenant/limits"


async def set_limits(client: httpx.AsyncClient, tenant: Any, **chosen: int) -> dict[str, Any]:
    answer = await client.put(LIMITS, json=chosen, headers=tenant.admin)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


async def test_limits_read_and_replaced_by_the_admin_only(client, make_tenant, settings) -> None:
    tenant = await make_tenant()
    default = settings.limits.turns_per_day
    before = (await client.get(LIMITS, headers=tenant.admin)).json()
    assert before["turns_per_day"] == {"value": default, "allowance": default, "chosen": None}
    after = await set_limits(client, tenant, turns_per_day=100)
    assert after["turns_per_day"] == {"value": 100, "allowance": default, "chosen": 100}
    again = await set_limits(client, tenant)  # PUT replaces the set: back to the allowance
    assert again["turns_per_day"]["chosen"] is None
    gateway = await tenant.key("gateway")
    assert (await client.get(LIMITS, headers=gateway)).status_code == 403
    put = await client.put(LIMITS, json={"memories": 1}, headers=gateway)
    assert put.status_code == 403
    changes = await client.get(
        "/v1/audit", params={"action": "limits.change"}, headers=tenant.admin
    )
    details = [e["detail"] for e in changes.json()["items"]]
    assert details[0] == {"before": {}, "after": {"turns_per_day": 100}}


async def test_a_limit_above_the_allowance_is_refused_until_the_operator_allows_it(
    client, resources, make_tenant, settings
) -> None:
    tenant = await make_tenant()
    above = settings.limits.key_requests_per_second + 1
    refused = await client.put(
        LIMITS, json={"key_requests_per_second": above}, headers=tenant.admin
    )
    assert refused.status_code == 422
    assert refused.json()["code"] == "limit_above_allowance"
    assert refused.json()["errors"][0]["field"] == "key_requests_per_second"
    for bad in ({"memories": 0}, {"memories": -1}, {"tokens": 5}):
        answer = await client.put(LIMITS, json=bad, headers=tenant.admin)
        assert answer.status_code == 422, bad
    async with tenant_transaction(resources.sessions, TenantId(tenant.id)) as session:
        service = TenantLimitsService(session, TenantId(tenant.id), settings.limits)
        await service.allow({LimitName.KEY_REQUESTS_PER_SECOND: above * 2})
    accepted = await set_limits(client, tenant, key_requests_per_second=above)
    assert accepted["key_requests_per_second"] == {
        "value": above,
        "allowance": above * 2,
        "chosen": above,
    }


async def test_turns_over_the_days_quota_are_refused_until_midnight(client, make_tenant) -> None:
    tenant = await make_tenant()
    await set_limits(client, tenant, turns_per_day=3)
    gateway = await tenant.key("gateway")
    rid = await resolved_relationship(client, gateway, "u-quota")
    url = f"/v1/relationships/{rid}/turns"

    def turns(*texts: str) -> dict[str, Any]:
        return {"turns": [{"session_id": "s", "role": "user", "text": t} for t in texts]}

    assert (
        await client.post(url, json=turns("早上好", "hello"), headers=gateway)
    ).status_code == 202
    duplicate = await client.post(url, json=turns("早上好"), headers=gateway)
    assert duplicate.json()["results"][0]["status"] == "duplicate"  # gives its share back
    refused = await client.post(url, json=turns("one", "two"), headers=gateway)
    assert refused.status_code == 429
    problem = refused.json()
    assert (problem["code"], problem["limit"], problem["used"]) == (
        "quota_exceeded",
        "turns_per_day",
        2,
    )
    assert 1 <= int(refused.headers["Retry-After"]) <= 86400
    assert refused.headers["RateLimit-Policy"].startswith('"turns";q=3;w=86400, "key";q=')
    assert refused.headers["RateLimit"].startswith('"turns";r=1;t=')
    assert (await client.post(url, json=turns("one"), headers=gateway)).status_code == 202


async def test_memories_over_the_quota_are_refused_and_deletions_free_it_at_the_recount(
    client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    await set_limits(client, tenant, memories=2)
    gateway = await tenant.key("gateway")
    rid = await resolved_relationship(client, gateway, "u-memories")
    url = f"/v1/relationships/{rid}/memories"
    first = await client.post(url, json={"content": "用户喜欢喝茶"}, headers=gateway)
    assert first.status_code == 201, first.text
    batch = {"memories": [{"content": "likes rain"}, {"content": "plays go"}]}
    refused = await client.post(f"{url}/batch", json=batch, headers=gateway)
    assert refused.status_code == 429
    assert refused.json()["limit"] == "memories"
    # The request's own rates follow (one list over two field lines, as the draft allows).
    assert refused.headers["RateLimit-Policy"].startswith('"memories";q=2, "key";q=')
    assert (
        await client.post(url, json={"content": "plays go"}, headers=gateway)
    ).status_code == 201
    deleted = await client.delete(f"{url}/{first.json()['id']}", headers=gateway)
    assert deleted.status_code == 204
    assert (await client.post(url, json={"content": "x"}, headers=gateway)).status_code == 429
    # The count is kept in Redis between recounts; when it is gone, Postgres is counted.
    await resources.redis.delete(f"tether:quota:{{{tenant.id}}}:memories")
    assert (await client.post(url, json={"content": "x"}, headers=gateway)).status_code == 201


async def test_knowledge_bytes_over_the_quota_are_refused(client, make_tenant) -> None:
    tenant = await make_tenant()
    await set_limits(client, tenant, knowledge_bytes=100)
    made = await client.post("/v1/knowledge-bases", json={"name": "kb"}, headers=tenant.admin)
    documents = f"/v1/knowledge-bases/{made.json()['id']}/documents"

    async def upload(data: bytes) -> httpx.Response:
        return await client.post(documents, files={"file": ("a.txt", data)}, headers=tenant.admin)

    assert (await upload(b"a" * 60)).status_code == 202
    assert (await upload(b"a" * 60)).status_code == 200  # the same file: nothing new stored
    refused = await upload(b"b" * 60)
    assert refused.status_code == 429
    assert refused.json()["limit"] == "knowledge_bytes"
    assert (await upload(b"c" * 40)).status_code == 202


async def test_requests_are_served_without_limits_when_redis_is_away(
    client, resources, make_tenant, tmp_path
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid = await resolved_relationship(client, gateway, "u-away")
    await set_limits(client, tenant, key_requests_per_second=1, turns_per_day=1)
    absent = f"unix://{tmp_path}/absent.sock"
    settings = resources.settings.model_copy(update={"redis_url": absent, "hot_redis_url": absent})
    async with app_client(settings) as away:
        answers = [await away.get("/v1/personas", headers=gateway) for _ in range(4)]
        assert {a.status_code for a in answers} == {200}
        assert "RateLimit" not in answers[0].headers
        body = {"turns": [{"session_id": "s", "role": "user", "text": f"t{i}"} for i in range(3)]}
        turns = await away.post(f"/v1/relationships/{rid}/turns", json=body, headers=gateway)
        assert turns.status_code == 202, turns.text
