"""Admission rules through the API and the real worker (decision 0053): a newer memory
replaces an older one only on evidence at least as strong; otherwise the pair is an open
conflict that the API lists and resolves, and the context presents the stronger one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.integration.test_memory_extraction import _relationship, _session, _wait_extracted

pytestmark = [pytest.mark.integration, pytest.mark.worker]


@pytest.fixture(scope="module")
async def gateway(make_tenant):  # type: ignore[no-untyped-def]
    tenant = await make_tenant()
    return tenant, await tenant.key("gateway")


def _about(memories: list[dict], word: str) -> list[dict]:
    return [m for m in memories if word in m["content"] and m["memory_type"] != "summary"]


async def _talk(client, headers, rid: str, session_id: str, lines, at: datetime) -> list[dict]:
    await _session(client, headers, rid, session_id, lines, at)
    return await _wait_extracted(client, headers, rid, session_id)


async def _context(client, headers, rid: str, query: str) -> str:
    body = {"relationship_id": rid, "query": query}
    response = await client.post("/v1/context", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return str(response.json()["context"])


async def _conflicts(client, headers, rid: str) -> list[dict]:
    response = await client.get(f"/v1/relationships/{rid}/conflicts", headers=headers)
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


@pytest.mark.parametrize(
    ("first", "later", "word"),
    [
        ("我以前超爱吃辣的", "我最近胃不好，不吃辣了", "辣"),
        (
            "I love spicy food.",
            "My stomach has been bad lately, so I don't eat spicy food anymore.",
            "spicy",
        ),
    ],
)
async def test_an_explicit_statement_supersedes_an_explicit_one(
    client, gateway, celery_worker, first: str, later: str, word: str
) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, f"adm-{word}")
    at = datetime.now(UTC) - timedelta(days=2)
    first = first.replace("以前", "")  # "以前…" alone is the past and is not kept
    before = _about(await _talk(client, headers, rid, "a1", [("user", first)], at), word)
    assert [m["provenance"] for m in before] == ["user_stated"]
    after = _about(
        await _talk(client, headers, rid, "a2", [("user", later)], at + timedelta(days=1)), word
    )
    assert [m["polarity"] for m in after] == ["negated"]
    assert after[0]["provenance"] == "user_stated"
    old = (
        await client.get(f"/v1/relationships/{rid}/memories/{before[0]['id']}", headers=headers)
    ).json()
    assert old["is_active"] is False
    assert old["superseded_by"] == after[0]["id"]
    assert await _conflicts(client, headers, rid) == []


@pytest.mark.parametrize(
    ("said", "asked", "word"),
    [
        ("我超爱吃辣的", "你是不是不吃辣了？", "辣"),
        ("I do not like coffee.", "Do you like coffee?", "coffee"),
    ],
)
async def test_a_vague_inference_does_not_replace_an_explicit_statement(
    client, gateway, celery_worker, said: str, asked: str, word: str
) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, f"vague-{word}")
    at = datetime.now(UTC) - timedelta(days=2)
    stated = _about(await _talk(client, headers, rid, "v1", [("user", said)], at), word)
    assert len(stated) == 1
    # A "yes" to the assistant's question: the words are the assistant's (rule_inferred).
    lines = [("assistant", asked), ("user", "嗯" if word == "辣" else "yeah")]
    memories = await _talk(client, headers, rid, "v2", lines, at + timedelta(days=1))
    assert [m["id"] for m in _about(memories, word)] == [stated[0]["id"]]
    [conflict] = await _conflicts(client, headers, rid)
    assert conflict["existing"]["id"] == stated[0]["id"]
    assert conflict["held"]["provenance"] == "rule_inferred"
    assert conflict["held"]["is_active"] is False
    assert conflict["held"]["polarity"] != stated[0]["polarity"]
    context = await _context(client, headers, rid, word)
    assert stated[0]["content"] in context
    assert conflict["held"]["content"] not in context
    log = (
        await client.get(
            f"/v1/relationships/{rid}/consolidations", params={"session_id": "v2"}, headers=headers
        )
    ).json()["items"]
    assert [e["outcome"] for e in log if e["target_memory_id"] == stated[0]["id"]] == ["conflict"]

    # The held claim wins once someone resolves the conflict in its favour; again: no change.
    url = f"/v1/relationships/{rid}/memories/{conflict['held']['id']}/resolve"
    resolved = await client.post(url, json={"reason": "asked the user"}, headers=headers)
    assert resolved.status_code == 200, resolved.text
    assert resolved.json()["memory"]["is_active"] is True
    assert [m["id"] for m in resolved.json()["prevailed_over"]] == [stated[0]["id"]]
    again = await client.post(url, json={}, headers=headers)
    assert again.status_code == 200
    assert again.json()["prevailed_over"] == []
    assert await _conflicts(client, headers, rid) == []
    context = await _context(client, headers, rid, word)
    assert conflict["held"]["content"] in context
    assert stated[0]["content"] not in context
    loser = f"/v1/relationships/{rid}/memories/{stated[0]['id']}/resolve"
    assert (await client.post(loser, json={}, headers=headers)).status_code == 409


@pytest.mark.parametrize(
    ("manual", "later", "word"),
    [
        ("用户喜欢吃辣", "我不吃辣了", "辣"),
        ("The user lives in Shenzhen", "I live in Zhuhai now.", "live"),
    ],
)
async def test_a_manual_edit_survives_later_pipeline_output(
    client, gateway, celery_worker, manual: str, later: str, word: str
) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, f"manual-{word}")
    at = datetime.now(UTC) - timedelta(days=2)
    extracted = await _talk(
        client,
        headers,
        rid,
        "m1",
        [("user", "我超爱吃辣的" if word == "辣" else "I live in Shenzhen.")],
        at,
    )
    [memory] = _about(extracted, "辣" if word == "辣" else "Shenzhen")
    edit = await client.patch(
        f"/v1/relationships/{rid}/memories/{memory['id']}",
        json={"content": manual, "provenance": "user_entered", "reason": "用户在设置里改的"},
        headers=headers,
    )
    assert edit.status_code == 200, edit.text
    assert edit.json()["provenance"] == "user_entered"
    await _talk(client, headers, rid, "m2", [("user", later)], at + timedelta(days=1))
    kept = (
        await client.get(f"/v1/relationships/{rid}/memories/{memory['id']}", headers=headers)
    ).json()
    assert kept["is_active"] is True
    assert kept["content"] == manual
    [conflict] = await _conflicts(client, headers, rid)
    assert conflict["existing"]["id"] == memory["id"]
    assert conflict["held"]["provenance"] == "user_stated"
    # Keeping the manual memory dismisses the held one for good.
    url = f"/v1/relationships/{rid}/memories/{memory['id']}/resolve"
    resolved = (await client.post(url, json={}, headers=headers)).json()
    assert [m["id"] for m in resolved["prevailed_over"]] == [conflict["held"]["id"]]
    assert await _conflicts(client, headers, rid) == []


async def test_manual_memories_record_who_entered_them_and_bad_values_are_refused(
    client, gateway, make_tenant
) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "manual-prov")
    url = f"/v1/relationships/{rid}/memories"
    staff = await client.post(url, json={"content": "用户喜欢茶"}, headers=headers)
    assert staff.json()["provenance"] == "staff_entered"
    user = await client.post(
        url, json={"content": "The user likes tea", "provenance": "user_entered"}, headers=headers
    )
    assert user.json()["provenance"] == "user_entered"
    bad = await client.post(
        url, json={"content": "x", "provenance": "user_stated"}, headers=headers
    )
    assert bad.status_code in (400, 422)
    assert bad.headers["content-type"].startswith("application/problem+json")
    # Another tenant's key sees neither the conflicts nor the memory.
    other = await (await make_tenant()).key("gateway")
    assert (
        await client.get(f"/v1/relationships/{rid}/conflicts", headers=other)
    ).status_code == 404
    resolve = f"{url}/{staff.json()['id']}/resolve"
    assert (await client.post(resolve, json={}, headers=other)).status_code == 404


async def test_a_conflict_whose_stronger_memory_was_deleted_can_still_be_accepted(
    client, gateway, celery_worker
) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, "deleted-existing")
    at = datetime.now(UTC) - timedelta(days=2)
    [memory] = _about(await _talk(client, headers, rid, "d1", [("user", "我超爱吃辣的")], at), "辣")
    url = f"/v1/relationships/{rid}/memories"
    edit = await client.patch(f"{url}/{memory['id']}", json={"importance": 0.9}, headers=headers)
    assert edit.json()["provenance"] == "staff_entered"
    await _talk(client, headers, rid, "d2", [("user", "我不吃辣了")], at + timedelta(days=1))
    [conflict] = await _conflicts(client, headers, rid)
    assert (await client.delete(f"{url}/{memory['id']}", headers=headers)).status_code == 204
    [orphan] = await _conflicts(client, headers, rid)
    assert orphan["existing"] is None
    assert orphan["reason"] == "the memory it conflicted with was deleted"
    resolved = await client.post(f"{url}/{conflict['id']}/resolve", json={}, headers=headers)
    assert resolved.status_code == 200, resolved.text
    assert resolved.json()["memory"]["is_active"] is True
    assert resolved.json()["prevailed_over"] == []
    assert await _conflicts(client, headers, rid) == []
