"""The partition store's tiers (decision 0030): a cold request reads Postgres for its
query alone, the fill after it keeps the whole partition, which answers every query as
a cold read would; writes are seen by the next read, and forgotten or erased text
leaves the hot tiers."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import MIXED_MEMORIES, resolve_body, wait_for_hot_copy
from tether.core.resources import Resources

pytestmark = pytest.mark.integration


async def _large(client: Any, headers: dict[str, str], user: str) -> tuple[str, list[str]]:
    response = await client.post("/v1/resolve", json=resolve_body(user), headers=headers)
    rid = str(response.json()["relationship_id"])
    body = {"memories": [{"content": c} for c in MIXED_MEMORIES]}
    created = await client.post(
        f"/v1/relationships/{rid}/memories/batch", json=body, headers=headers
    )
    assert created.status_code == 200, created.text
    return rid, [m["id"] for m in created.json()["results"]]


async def _search(client: Any, headers: dict[str, str], rid: str, query: str) -> dict[str, Any]:
    response = await client.post(
        f"/v1/relationships/{rid}/search", json={"query": query, "k": 6}, headers=headers
    )
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


async def _evict(resources: Resources, rid: str) -> None:
    """As Redis's TTL or an invalidation does: no local, no Redis copy."""
    for key in await resources.hot_redis.keys(f"tether:*:*:{rid}"):
        await resources.hot_redis.delete(key)


async def _fills(client: Any) -> int:
    return int((await client.get("/health")).json()["hot_tier"]["fills"])


def _assert_same_answer(one: dict[str, Any], other: dict[str, Any]) -> None:
    """The same memories in the same order, with the same explanations up to how the
    vectors are rounded (a hot copy ranks float16 vectors against the float32 query,
    Postgres halfvecs against the query as a halfvec)."""
    assert [r["id"] for r in one["items"]] == [r["id"] for r in other["items"]]
    for found, expected in zip(one["items"], other["items"], strict=True):
        found, expected = dict(found), dict(expected)
        assert found.pop("score") == pytest.approx(expected.pop("score"), rel=1e-4)
        explained, explaining = found.pop("explanation"), expected.pop("explanation")
        for name, value in explained.items():
            if isinstance(value, float):
                assert value == pytest.approx(explaining[name], rel=1e-4), name
            else:
                assert value == explaining[name], name
        assert found == expected


async def test_the_copy_a_fill_keeps_answers_every_query_as_a_cold_read_does(
    client: Any, make_tenant: Any, resources: Resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, _ = await _large(client, headers, "store-every-query")
    await _evict(resources, rid)
    fills = await _fills(client)
    first = await _search(client, headers, rid, "cello quartet")
    assert first["tier"] == "cold"
    assert first["items"], "the query finds memories"
    await wait_for_hot_copy(resources.hot_redis, rid)
    assert await _fills(client) == fills + 1
    again = await _search(client, headers, rid, "cello quartet")
    assert again["tier"] == "local"
    _assert_same_answer(again, first)
    for query in ("爬山", "火锅 Lyon", "peanuts 小白"):
        kept = await _search(client, headers, rid, query)
        assert kept["tier"] == "local"
        assert any(r["explanation"]["lexical_rank"] == 1 for r in kept["items"])
        await _evict(resources, rid)
        cold = await _search(client, headers, rid, query)
        assert cold["tier"] == "cold"
        _assert_same_answer(kept, cold)
        await wait_for_hot_copy(resources.hot_redis, rid)


@pytest.mark.parametrize("change", ["edit", "delete", "deactivate", "add"])
@pytest.mark.parametrize("tier", ["local", "cold"])
async def test_a_write_is_seen_by_the_next_read_from_any_tier(
    client: Any, make_tenant: Any, resources: Resources, change: str, tier: str
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await _large(client, headers, f"store-{change}-{tier}")
    await _search(client, headers, rid, "Lyon")
    await wait_for_hot_copy(resources.hot_redis, rid)
    base = f"/v1/relationships/{rid}/memories"
    if change == "edit":
        body = {"content": "The user's brother lives in Lyon"}
        response = await client.patch(f"{base}/{ids[1]}", json=body, headers=headers)
    elif change == "delete":
        response = await client.delete(f"{base}/{ids[1]}", headers=headers)
    elif change == "deactivate":
        body = {"reason": "no longer true"}
        response = await client.post(f"{base}/{ids[1]}/deactivate", json=body, headers=headers)
    else:
        response = await client.post(base, json={"content": "用户在学日语"}, headers=headers)
    assert response.status_code < 300, response.text
    if tier == "local":  # the copy the next read keeps after its cold read
        await _search(client, headers, rid, "anything")
        await wait_for_hot_copy(resources.hot_redis, rid)
    found = await _search(client, headers, rid, "Lyon 日语")
    assert found["tier"] == tier
    contents = [r["content"] for r in found["items"]]
    assert ("The user's sister lives in Lyon" in contents) == (change == "add")
    assert ("The user's brother lives in Lyon" in contents) == (change == "edit")
    assert ("用户在学日语" in contents) == (change == "add")


async def test_forgotten_and_erased_text_leaves_the_hot_tiers(
    client: Any, make_tenant: Any, resources: Resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid, ids = await _large(client, headers, "store-forget")
    await _search(client, headers, rid, "Lyon")
    await wait_for_hot_copy(resources.hot_redis, rid)
    preview = await client.post(
        f"/v1/relationships/{rid}/forget",
        json={"memory_ids": [ids[1]], "hard": True},
        headers=headers,
    )
    assert preview.status_code in {200, 201}, preview.text
    confirmed = await client.post(
        f"/v1/relationships/{rid}/forget/confirm",
        json={"token": preview.json()["token"]},
        headers=headers,
    )
    assert confirmed.status_code in {200, 201}, confirmed.text
    found = await _search(client, headers, rid, "Lyon sister")
    assert all("Lyon" not in r["content"] for r in found["items"])
    await wait_for_hot_copy(resources.hot_redis, rid)
    (blob,) = await resources.hot_redis.keys(f"tether:hot*:*:{rid}")
    held = await resources.hot_redis.get(blob)
    assert b"sister lives in Lyon" not in held
    assert b"allergic to peanuts" in held
    user = (
        await client.post("/v1/resolve", json=resolve_body("store-forget"), headers=headers)
    ).json()["global_user_id"]
    erased = await client.delete(f"/v1/users/{user}", headers=tenant.admin)
    assert erased.status_code == 200, erased.text
    assert not await resources.hot_redis.keys(f"tether:*:*:{rid}")
