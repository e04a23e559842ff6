"""Manual control of memories through the API, and recall over them."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.support import resolve_body

pytestmark = pytest.mark.integration


async def _relationship(
    client: httpx.AsyncClient, headers: dict[str, str], user: str, persona: str = "p-1"
) -> str:
    response = await client.post("/v1/resolve", json=resolve_body(user, persona), headers=headers)
    assert response.status_code in (200, 201), response.text
    return str(response.json()["relationship_id"])


@pytest.fixture(scope="module")
async def gateway(make_tenant):  # type: ignore[no-untyped-def]
    tenant = await make_tenant()
    return tenant, await tenant.key("gateway")


async def test_create_get_list_edit_history(client, gateway) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "crud")
    url = f"/v1/relationships/{rid}/memories"
    created = await client.post(
        url, json={"content": "用户喜欢吃辣", "memory_type": "preference"}, headers=headers
    )
    assert created.status_code == 201, created.text
    memory = created.json()
    assert memory["confidence"] == 1.0
    assert memory["origin"] == "manual"
    assert memory["version"] == 1
    mid = memory["id"]
    edited = await client.patch(
        f"{url}/{mid}", json={"content": "用户不吃辣了", "reason": "用户说的"}, headers=headers
    )
    assert edited.status_code == 200, edited.text
    assert edited.json()["version"] == 2
    history = (await client.get(f"{url}/{mid}/history", headers=headers)).json()["items"]
    assert [(v["version"], v["change"]) for v in history] == [(1, "created"), (2, "edited")]
    assert history[0]["snapshot"]["content"] == "用户喜欢吃辣"
    assert history[1]["reason"] == "用户说的"
    listed = (await client.get(url, params={"memory_type": "preference"}, headers=headers)).json()
    assert [m["id"] for m in listed["items"]] == [mid]


async def test_external_id_makes_create_idempotent(client, gateway) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "idem")
    url = f"/v1/relationships/{rid}/memories"
    body = {
        "content": "Caroline went to a support group",
        "external_id": "D1:3",
        "occurred_at": "2023-05-08T13:56:00Z",
    }
    first = await client.post(url, json=body, headers=headers)
    again = await client.post(url, json=body, headers=headers)
    assert first.status_code == 201
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    batch = {"memories": [body, {"content": "new one", "external_id": "D1:4"}]}
    result = (await client.post(f"{url}/batch", json=batch, headers=headers)).json()
    assert [r["status"] for r in result["results"]] == ["exists", "created"]
    assert result["results"][0]["id"] == first.json()["id"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"memories": []}, "memories"),
        ({"memories": [{"content": ""}]}, "memories[0].content"),
        ({"memories": [{"content": "x" * 2001}]}, "memories[0].content"),
        ({"memories": [{"content": "ok", "memory_type": "gossip"}]}, "memories[0].memory_type"),
        ({"memories": [{"content": "ok", "importance": 2}]}, "memories[0].importance"),
        (
            {"memories": [{"content": "ok", "occurred_at": "2999-01-01T00:00:00Z"}]},
            "memories[0].occurred_at",
        ),
        (
            {
                "memories": [
                    {"content": "ok", "external_id": "a"},
                    {"content": "b", "external_id": "a"},
                ]
            },
            "memories[1].external_id",
        ),
        ({"memories": [{"content": "ok"}] * 501}, "memories"),
    ],
)
async def test_bad_memories_are_422_and_store_nothing(client, gateway, body, field) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "bad")
    url = f"/v1/relationships/{rid}/memories"
    response = await client.post(f"{url}/batch", json=body, headers=headers)
    assert response.status_code == 422, response.text
    assert any(e["field"].startswith(field) for e in response.json()["errors"]), response.json()
    assert (await client.get(url, headers=headers)).json()["items"] == []


async def test_deactivate_and_delete_stop_recall(client, gateway) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "lifecycle")
    url = f"/v1/relationships/{rid}/memories"
    a = (
        await client.post(url, json={"content": "I love hiking in the Alps"}, headers=headers)
    ).json()["id"]
    b = (
        await client.post(url, json={"content": "I love hiking with my dog"}, headers=headers)
    ).json()["id"]
    search = f"/v1/relationships/{rid}/search"
    found = (await client.post(search, json={"query": "hiking"}, headers=headers)).json()
    assert {r["id"] for r in found["items"]} == {a, b}
    assert (
        await client.post(
            f"{url}/{a}/deactivate", json={"reason": "no longer true"}, headers=headers
        )
    ).status_code == 200
    assert (await client.delete(f"{url}/{b}", headers=headers)).status_code == 204
    after = (await client.post(search, json={"query": "hiking"}, headers=headers)).json()
    assert after["items"] == []
    assert (await client.get(f"{url}/{b}", headers=headers)).status_code == 404
    inactive = (await client.get(url, params={"active": "false"}, headers=headers)).json()["items"]
    assert [m["id"] for m in inactive] == [a]


async def test_search_explains_each_result_in_chinese_and_english(client, gateway) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "search")
    url = f"/v1/relationships/{rid}/memories/batch"
    memories = [
        {"content": "用户喜欢吃四川火锅，越辣越好", "memory_type": "preference"},
        {"content": "用户在深圳一家银行工作", "memory_type": "profile"},
        {"content": "The user's dog is called Biscuit", "memory_type": "fact"},
        {"content": "The user is training for a marathon in October", "memory_type": "event"},
    ]
    assert (await client.post(url, json={"memories": memories}, headers=headers)).status_code == 200
    search = f"/v1/relationships/{rid}/search"
    zh = (
        await client.post(search, json={"query": "他喜欢吃什么辣的", "k": 2}, headers=headers)
    ).json()
    assert zh["items"][0]["content"] == "用户喜欢吃四川火锅，越辣越好"
    en = (
        await client.post(
            search, json={"query": "what is the name of my dog?", "k": 2}, headers=headers
        )
    ).json()
    assert en["items"][0]["content"] == "The user's dog is called Biscuit"
    explanation = en["items"][0]["explanation"]
    assert explanation["lexical_rank"] == 1
    assert explanation["final_score"] == en["items"][0]["score"]
    assert set(en["timings_ms"]) >= {"resolve", "load", "embed", "rank", "total"}
    assert en["degraded"] == []
    typed = (
        await client.post(
            search, json={"query": "dog marathon", "types": ["event"]}, headers=headers
        )
    ).json()
    assert [r["memory_type"] for r in typed["items"]] == ["event"]


async def test_search_in_one_relationship_never_returns_anothers(
    client, gateway, make_tenant
) -> None:
    _, headers = gateway
    mine = await _relationship(client, headers, "iso-a")
    theirs = await _relationship(client, headers, "iso-b")
    other_tenant = await make_tenant()
    other_headers = await other_tenant.key("gateway")
    foreign = await _relationship(client, other_headers, "iso-a")
    for rid, h, text in (
        (theirs, headers, "secret garden of B"),
        (foreign, other_headers, "secret garden of T2"),
    ):
        await client.post(f"/v1/relationships/{rid}/memories", json={"content": text}, headers=h)
    await client.post(
        f"/v1/relationships/{mine}/memories", json={"content": "my own garden"}, headers=headers
    )
    found = (
        await client.post(
            f"/v1/relationships/{mine}/search",
            json={"query": "secret garden", "k": 50},
            headers=headers,
        )
    ).json()
    assert [r["content"] for r in found["items"]] == ["my own garden"]
    cross = await client.post(
        f"/v1/relationships/{foreign}/search", json={"query": "garden"}, headers=headers
    )
    assert cross.status_code == 404
    missing = await client.get(f"/v1/relationships/{mine}/memories/{uuid.uuid4()}", headers=headers)
    assert missing.status_code == 404
