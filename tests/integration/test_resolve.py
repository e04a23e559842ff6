"""POST /v1/resolve: creation, idempotency, concurrency, the cache, Redis outages."""

import asyncio

import pytest
from sqlalchemy import func, select

from tenancy.models import Relationship
from tests.support import count_sql, owner_sessions, redis_down_client
from tether.core.resources import Resources
from tether.core.settings import Settings

pytestmark = pytest.mark.integration


def body(user: str = "u-1", persona: str = "p-1", creator: str = "c-1", facet: str = "default"):
    return {
        "user": {"external_id": user},
        "facet": facet,
        "persona": {"external_id": persona, "creator_external_id": creator},
    }


async def test_first_resolve_creates_everything_then_returns_the_same(client, make_tenant) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    first = await client.post("/v1/resolve", json=body("alice"), headers=gateway)
    assert first.status_code == 201, first.text
    assert first.json()["created"] is True
    again = await client.post("/v1/resolve", json=body("alice"), headers=gateway)
    assert again.status_code == 200
    assert again.json() | {"created": True} == first.json()


async def test_fifty_parallel_resolves_make_one_relationship(
    client, make_tenant, resources: Resources
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    answers = await asyncio.gather(
        *(client.post("/v1/resolve", json=body("racer"), headers=gateway) for _ in range(50))
    )
    assert {a.status_code for a in answers} <= {200, 201}
    assert len({a.json()["relationship_id"] for a in answers}) == 1
    assert sum(a.json()["created"] for a in answers) == 1
    async with owner_sessions(resources)() as session:
        count = await session.scalar(
            select(func.count())
            .select_from(Relationship)
            .where(Relationship.tenant_id == tenant.id)
        )
    assert count == 1


async def test_cache_hit_runs_no_sql(client, make_tenant, resources: Resources) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    await client.post("/v1/resolve", json=body("cached"), headers=gateway)
    await client.post("/v1/resolve", json=body("cached"), headers=gateway)  # warms auth too
    with count_sql(resources) as statements:
        hit = await client.post("/v1/resolve", json=body("cached"), headers=gateway)
    assert hit.status_code == 200
    assert statements == []


async def test_cache_miss_after_flush_still_resolves_from_postgres(
    client, make_tenant, resources: Resources
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    created = (await client.post("/v1/resolve", json=body("flushed"), headers=gateway)).json()
    await resources.redis.flushdb()
    again = await client.post("/v1/resolve", json=body("flushed"), headers=gateway)
    assert again.json()["relationship_id"] == created["relationship_id"]


async def test_resolve_is_correct_when_redis_is_down(
    settings: Settings, client, make_tenant, tmp_path
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    expected = (await client.post("/v1/resolve", json=body("nored"), headers=gateway)).json()
    async with redis_down_client(settings, tmp_path) as down:
        same = await down.post("/v1/resolve", json=body("nored"), headers=gateway)
        fresh = await down.post("/v1/resolve", json=body("new-user"), headers=gateway)
        fresh_again = await down.post("/v1/resolve", json=body("new-user"), headers=gateway)
    assert same.status_code == 200
    assert same.json()["relationship_id"] == expected["relationship_id"]
    assert fresh.status_code == 201
    assert fresh_again.json()["relationship_id"] == fresh.json()["relationship_id"]


async def test_same_external_ids_in_two_tenants_are_different_relationships(
    client, make_tenant
) -> None:
    a, b = await make_tenant(), await make_tenant()
    in_a = await client.post("/v1/resolve", json=body("same"), headers=await a.key("gateway"))
    in_b = await client.post("/v1/resolve", json=body("same"), headers=await b.key("gateway"))
    assert in_a.json()["relationship_id"] != in_b.json()["relationship_id"]
    assert in_a.json()["global_user_id"] != in_b.json()["global_user_id"]


async def test_facets_split_one_user_into_separate_relationships(client, make_tenant) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    work = await client.post("/v1/resolve", json=body("bob", facet="work"), headers=gateway)
    play = await client.post("/v1/resolve", json=body("bob", facet="play"), headers=gateway)
    assert work.json()["global_user_id"] == play.json()["global_user_id"]
    assert work.json()["relationship_id"] != play.json()["relationship_id"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        (body(user=""), "user.external_id"),
        (body(user="x" * 129), "user.external_id"),
        (body(user="bad\x00id"), "user.external_id"),
        (body(persona="tab\there"), "persona.external_id"),
        ({"user": {"external_id": "u"}}, "persona"),
        (body() | {"tenant_id": "x"}, "tenant_id"),
    ],
)
async def test_bad_resolve_input_is_422_naming_the_field(
    client, make_tenant, payload, field
) -> None:
    tenant = await make_tenant()
    response = await client.post("/v1/resolve", json=payload, headers=await tenant.key("gateway"))
    assert response.status_code == 422, response.text
    assert field.split(".")[-1] in response.json()["detail"]


async def test_invalid_utf8_body_is_a_4xx_problem(client, make_tenant) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway") | {"Content-Type": "application/json"}
    raw = (
        b'{"user": {"external_id": "\xff\xfe"},'
        b' "persona": {"external_id": "p", "creator_external_id": "c"}}'
    )
    response = await client.post("/v1/resolve", content=raw, headers=headers)
    assert 400 <= response.status_code < 500
    assert response.headers["content-type"].startswith("application/problem+json")


async def test_a_role_without_permission_gets_403(client, make_tenant) -> None:
    tenant = await make_tenant()
    response = await client.post("/v1/resolve", json=body(), headers=await tenant.key("compliance"))
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"


async def test_a_revoked_key_gets_401(client, make_tenant) -> None:
    tenant = await make_tenant()
    issued = await client.post("/v1/api-keys", json={"role": "gateway"}, headers=tenant.admin)
    token, key_id = issued.json()["token"], issued.json()["key"]["id"]
    headers = {"Authorization": f"Bearer {token}"}
    assert (await client.post("/v1/resolve", json=body(), headers=headers)).status_code == 201
    revoked = await client.delete(f"/v1/api-keys/{key_id}", headers=tenant.admin)
    assert revoked.status_code == 204
    assert (await client.post("/v1/resolve", json=body(), headers=headers)).status_code == 401


async def test_another_tenants_key_id_cannot_be_revoked(client, make_tenant) -> None:
    a, b = await make_tenant(), await make_tenant()
    issued = await client.post("/v1/api-keys", json={"role": "gateway"}, headers=a.admin)
    key_id = issued.json()["key"]["id"]
    response = await client.delete(f"/v1/api-keys/{key_id}", headers=b.admin)
    assert response.status_code == 404


async def test_a_tenant_of_another_region_cannot_write_here(client, make_tenant) -> None:
    elsewhere = await make_tenant(region="cn-north")
    response = await client.post("/v1/resolve", json=body(), headers=elsewhere.admin)
    assert response.status_code == 421
    assert response.json()["code"] == "wrong_region"
    reads = await client.get("/v1/relationships", headers=elsewhere.admin)
    assert reads.status_code == 200
