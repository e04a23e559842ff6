"""POST /v1/memories/extract: what the pipeline would extract and decide, in Chinese
and English, against memories the real worker stored; and that it writes nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.integration.conversation_support import relationship, row_counts, say, wait_extracted

pytestmark = [pytest.mark.integration, pytest.mark.worker]

PATH = "/v1/memories/extract"


@pytest.fixture(scope="module")
async def gateway(make_tenant):  # type: ignore[no-untyped-def]
    tenant = await make_tenant()
    return tenant, await tenant.key("gateway")


async def test_preview_decides_against_stored_memories_and_writes_nothing(
    client, gateway, celery_worker, superuser
) -> None:
    _, headers = gateway
    rid = await relationship(client, headers, "preview-zh")
    at = datetime.now(UTC) - timedelta(days=2)
    await say(client, headers, rid, "s1", [("user", "我特别喜欢吃辣"), ("user", "我住在深圳")], at)
    await wait_extracted(superuser, rid, "s1")
    stored = (
        await client.get(
            f"/v1/relationships/{rid}/memories", params={"active": "true"}, headers=headers
        )
    ).json()["items"]
    spicy = next(m["id"] for m in stored if "辣" in m["content"] and m["memory_type"] != "summary")
    before = await row_counts(superuser, rid)
    body = {
        "relationship_id": rid,
        "turns": [
            {"role": "user", "text": "我现在不吃辣了"},
            {"role": "assistant", "text": "好的"},
            {"role": "user", "text": "我还是住在深圳，手机号13812345678"},
            {"role": "user", "text": "我养了一只猫"},
            {"role": "user", "text": "我养了一只猫"},
        ],
    }
    response = await client.post(PATH, json=body, headers=headers)
    assert response.status_code == 200, response.text
    preview = response.json()
    assert preview["dry_run"] is True
    assert preview["steps"] == ["rules"]
    actions = {d["candidate"]: d for d in preview["decisions"]}
    by_content = {c["content"]: c["index"] for c in preview["candidates"]}
    spicy_now = next(i for c, i in by_content.items() if "辣" in c)
    assert actions[spicy_now]["action"] == "supersede"
    assert actions[spicy_now]["target_memory_id"] == spicy
    city = next(i for c, i in by_content.items() if "深圳" in c)
    assert actions[city]["action"] == "duplicate"
    cats = [
        d for d in preview["decisions"] if "猫" in preview["candidates"][d["candidate"]]["content"]
    ]
    assert next(d["action"] for d in cats) == "insert"
    if len(cats) > 1:  # the same statement twice: the second merges into the first
        assert cats[1]["action"] == "duplicate"
        assert cats[1]["target_candidate"] == cats[0]["candidate"]
    assert preview["candidates"][spicy_now]["source_turns"] == [0]
    assert "phone" in " ".join(preview["masked"]) or preview["masked"]
    assert "13812345678" not in response.text
    assert preview["summary"]
    assert await row_counts(superuser, rid) == before


async def test_english_preview_of_a_new_relationship_inserts(client, gateway, superuser) -> None:
    _, headers = gateway
    rid = await relationship(client, headers, "preview-en")
    before = await row_counts(superuser, rid)
    turns = [
        {"role": "user", "text": "I'm allergic to peanuts."},
        {
            "role": "user",
            "text": "I have my driving test next Friday.",
            "at": "2026-11-04T10:00:00Z",
        },
    ]
    response = await client.post(
        PATH, json={"relationship_id": rid, "turns": turns}, headers=headers
    )
    assert response.status_code == 200, response.text
    preview = response.json()
    assert {d["action"] for d in preview["decisions"]} == {"insert"}
    test = next(c for c in preview["candidates"] if "driving test" in c["content"])
    assert test["expires_at"].startswith("2026-11-14")
    assert await row_counts(superuser, rid) == before


@pytest.mark.parametrize(
    ("turns", "field"),
    [
        ([], "turns"),
        ([{"role": "user", "text": "x" * 4001}], "turns[0].text"),
        ([{"role": "user", "text": "x" * 3000}] * 14, "turns"),
        ([{"role": "user", "text": "   "}], "turns[0].text"),
        ([{"role": "user", "text": "hi", "at": "2026-01-01T00:00:00"}], "turns[0].at"),
        ([{"role": "system", "text": "hi"}], "turns[0].role"),
    ],
)
async def test_preview_bounds_its_input(client, gateway, turns, field) -> None:
    _, headers = gateway
    rid = await relationship(client, headers, "preview-bounds")
    body = {"relationship_id": rid, "turns": turns}
    response = await client.post(PATH, json=body, headers=headers)
    assert response.status_code in (400, 422), response.text
    assert response.headers["content-type"].startswith("application/problem+json")


async def test_preview_is_not_a_write_and_not_another_tenant_s(
    client, gateway, make_tenant
) -> None:
    _, headers = gateway
    rid = await relationship(client, headers, "preview-auth")
    turns = [{"role": "user", "text": "我喜欢喝绿茶"}]
    refused = await client.post(
        PATH, json={"relationship_id": rid, "turns": turns, "dry_run": False}, headers=headers
    )
    assert refused.status_code == 422
    other = await make_tenant()
    foreign = await client.post(
        PATH, json={"relationship_id": rid, "turns": turns}, headers=await other.key("gateway")
    )
    assert foreign.status_code == 404


async def test_preview_holds_what_would_overwrite_a_manual_memory(
    client, gateway, celery_worker, superuser
) -> None:
    """Admission rules in the dry run: the pipeline never replaces what a person entered,
    so the preview says the contradicting claim would be held as an open conflict."""
    _, headers = gateway
    rid = await relationship(client, headers, "preview-manual")
    at = datetime.now(UTC) - timedelta(days=2)
    await say(client, headers, rid, "s1", [("user", "我超爱吃辣的")], at)
    await wait_extracted(superuser, rid, "s1")
    stored = (
        await client.get(
            f"/v1/relationships/{rid}/memories", params={"active": "true"}, headers=headers
        )
    ).json()["items"]
    spicy = next(m["id"] for m in stored if "辣" in m["content"] and m["memory_type"] != "summary")
    edit = await client.patch(
        f"/v1/relationships/{rid}/memories/{spicy}",
        json={"content": "用户喜欢吃辣", "provenance": "user_entered", "reason": "用户自己改的"},
        headers=headers,
    )
    assert edit.status_code == 200, edit.text
    before = await row_counts(superuser, rid)
    body = {"relationship_id": rid, "turns": [{"role": "user", "text": "我不吃辣了"}]}
    preview = (await client.post(PATH, json=body, headers=headers)).json()
    candidate = next(c["index"] for c in preview["candidates"] if "辣" in c["content"])
    decision = next(d for d in preview["decisions"] if d["candidate"] == candidate)
    assert decision["action"] == "hold", preview
    assert decision["target_memory_id"] == spicy
    assert await row_counts(superuser, rid) == before
