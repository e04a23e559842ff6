"""A cold read for one query (decision 0030: a partition in neither hot tier is read for
the request's query, then the texts of its results) answers exactly as the hot copy its
fill keeps: for every filter, for a caller who may see the creator's private
notes and one who may not, with neighbours from the same session, and with the newest
visible summary in /v1/context."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.support import resolve_body, wait_for_hot_copy

pytestmark = pytest.mark.integration

START = datetime(2026, 5, 1, 9, tzinfo=UTC)
MEMORIES: list[dict[str, Any]] = [
    {"content": "The user plays the cello in a string quartet", "session_id": "s-1"},
    {"content": "Rehearsals are on Thursday evenings", "session_id": "s-1"},
    {"content": "用户每周六去爬山", "memory_type": "event", "layer": "episodic"},
    {"content": "用户喜欢吃四川火锅", "memory_type": "preference", "session_id": "s-2"},
    {"content": "火锅要特辣", "memory_type": "preference", "session_id": "s-2"},
    {"content": "The user is allergic to peanuts", "importance": 0.9},
    {"content": "Plays the cello badly, says the creator", "private_to_creator": True},
    {"content": "用户的猫叫小白", "layer": "working", "session_id": "s-3"},
    {"content": "用户最近在学大提琴和火锅做法", "memory_type": "summary"},
    {"content": "Private summary: a cello lover", "memory_type": "summary"},
    {"content": "The user's sister lives in Lyon and likes hot pot"},
]
QUERIES: list[dict[str, Any]] = [
    {"query": "cello quartet"},
    {"query": "火锅", "types": ["preference"]},
    {"query": "cello 火锅", "types": ["fact", "summary"], "layers": ["semantic"]},
    {"query": "猫 爬山", "layers": ["working", "episodic"]},
    {"query": "cello", "types": ["commitment"]},
    {"query": "nothing matches zebra"},
]


async def _relationship(client: Any, tenant: Any, resources: Any) -> str:
    """A relationship whose memories the creator wrote, some of them private notes (the
    second summary is the newest and private)."""
    creator, gateway = await tenant.key("creator", "c-1"), await tenant.key("gateway")
    response = await client.post("/v1/resolve", json=resolve_body("cold-query"), headers=gateway)
    rid = str(response.json()["relationship_id"])
    memories = [
        {**m, "occurred_at": (START + timedelta(hours=i)).isoformat()}
        for i, m in enumerate(MEMORIES)
    ]
    memories[-2]["private_to_creator"] = True
    created = await client.post(
        f"/v1/relationships/{rid}/memories/batch", json={"memories": memories}, headers=creator
    )
    assert created.status_code == 200, created.text
    return rid


async def _cold_then_hot(
    client: Any, resources: Any, headers: dict[str, str], rid: str, path: str, body: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``body`` answered by a cold read, then by the hot copy."""
    for key in await resources.hot_redis.keys(f"tether:*:*:{rid}"):
        await resources.hot_redis.delete(key)
    cold = await client.post(path, json=body, headers=headers)
    assert cold.status_code == 200, cold.text
    await wait_for_hot_copy(resources.hot_redis, rid)
    hot = await client.post(path, json=body, headers=headers)
    assert hot.status_code == 200, hot.text
    return cold.json(), hot.json()


def _assert_same_hits(cold: list[dict[str, Any]], hot: list[dict[str, Any]]) -> None:
    """The same memories in the same order with the same explanations (what comes of
    similarities to float16 precision: Postgres compares the query as a halfvec, the
    hot copy a float32 query with float16 vectors)."""
    assert [h["id"] for h in cold] == [h["id"] for h in hot]
    for found, expected in zip(cold, hot, strict=True):
        found, expected = dict(found), dict(expected)
        assert found.pop("score") == pytest.approx(expected.pop("score"), rel=1e-3)
        explained, explaining = found.pop("explanation"), expected.pop("explanation")
        assert explained.keys() == explaining.keys()
        for name, value in explained.items():
            if isinstance(value, float):
                assert value == pytest.approx(explaining[name], rel=1e-3, abs=1e-4), name
            else:
                assert value == explaining[name], name
        assert found == expected


async def test_a_cold_read_for_one_query_answers_as_the_hot_copy_does(
    client: Any, make_tenant: Any, resources: Any
) -> None:
    tenant = await make_tenant()
    rid = await _relationship(client, tenant, resources)
    path = f"/v1/relationships/{rid}/search"
    for role in ("gateway", "creator"):
        headers = await tenant.key(role, "c-1" if role == "creator" else None)
        for query in QUERIES:
            cold, hot = await _cold_then_hot(client, resources, headers, rid, path, query)
            assert (cold["tier"], hot["tier"]) == ("cold", "local"), query
            _assert_same_hits(cold["items"], hot["items"])
            contents = [h["content"] for h in cold["items"]]
            if role == "gateway":
                assert not any("creator" in c or "Private" in c for c in contents), contents
            if query["query"] == "nothing matches zebra" or "commitment" in query.get("types", []):
                continue
            assert cold["items"], query


async def test_the_context_of_a_cold_read_for_one_query_is_the_hot_copys(
    client: Any, make_tenant: Any, resources: Any
) -> None:
    """Including the newest summary the caller may see: the private one for the creator,
    the one before it for the gateway."""
    tenant = await make_tenant()
    rid = await _relationship(client, tenant, resources)
    summaries = {"gateway": "用户最近在学大提琴", "creator": "Private summary"}
    for query in ("cello 火锅", "zebra crossing at night"):  # the second recalls nothing
        body = {"relationship_id": rid, "query": query, "recent_turns": 0}
        for role, summary in summaries.items():
            headers = await tenant.key(role, "c-1" if role == "creator" else None)
            path = "/v1/context"
            cold, hot = await _cold_then_hot(client, resources, headers, rid, path, body)
            assert cold["context"] == hot["context"]
            assert summary in cold["context"]
            assert [i["id"] for i in cold["items"]] == [i["id"] for i in hot["items"]]
            if role == "gateway":
                assert "Private summary" not in cold["context"]
                assert "says the creator" not in cold["context"]
            if query.startswith("zebra"):  # the summary is there as the latest, not a hit
                latest = [i for i in cold["items"] if i["reason"] == "latest session summary"]
                assert len(latest) == 1
                assert summary in latest[0]["text"]
