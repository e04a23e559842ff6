"""Never "nothing" for a plain question (issue 38, decision 0054): after a short bilingual
conversation, questions that share no word with the stored facts still find them; pets'
names are facts; a session summary names topics, never a fact a later session changed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.integration.test_memory_extraction import _relationship, _session, _wait_extracted

pytestmark = [pytest.mark.integration, pytest.mark.worker]

CONVERSATION = [
    ("user", "Hi! I'm a nurse at the city hospital."),
    ("assistant", "That sounds demanding. What do you do to relax?"),
    ("user", "I love green tea, and my dog is called Mochi."),
    ("user", "I'm allergic to peanuts."),
    ("user", "我最喜欢喝绿茶，我的猫叫团子。"),
    ("user", "我是护士，对花生过敏。"),
]
QUESTIONS = [
    ("What is my job?", ("nurse", "护士")),
    ("what should I drink?", ("green tea", "绿茶")),
    ("Can I eat peanut butter?", ("peanut", "花生")),
    ("What is my dog called?", ("Mochi",)),
    ("我是做什么工作的？", ("nurse", "护士")),
    ("我该喝点什么？", ("green tea", "绿茶")),
    ("我能吃花生酱吗？", ("peanut", "花生")),
    ("我的猫叫什么名字？", ("团子",)),
]


@pytest.fixture(scope="module")
async def gateway(make_tenant):  # type: ignore[no-untyped-def]
    tenant = await make_tenant()
    return tenant, await tenant.key("gateway")


@pytest.fixture(scope="module")
async def talked(client, gateway, celery_worker) -> str:  # type: ignore[no-untyped-def]
    _, headers = gateway
    rid = await _relationship(client, headers, "plain")
    at = datetime.now(UTC) - timedelta(hours=1)
    await _session(client, headers, rid, "p1", CONVERSATION, at)
    await _wait_extracted(client, headers, rid, "p1")
    return rid


async def _search(client, headers, rid: str, query: str, k: int = 3) -> list[str]:
    response = await client.post(
        f"/v1/relationships/{rid}/search", json={"query": query, "k": k}, headers=headers
    )
    assert response.status_code == 200, response.text
    return [hit["content"] for hit in response.json()["items"]]


@pytest.mark.parametrize(("question", "evidence"), QUESTIONS)
async def test_a_plain_question_finds_the_fact_that_answers_it(
    client, gateway, talked, question: str, evidence: tuple[str, ...]
) -> None:
    _, headers = gateway
    found = await _search(client, headers, talked, question)
    assert any(word in text for text in found for word in evidence), (question, found)
    context = await client.post(
        "/v1/context", json={"relationship_id": talked, "query": question}, headers=headers
    )
    assert any(word in context.json()["context"] for word in evidence)


async def test_pets_names_are_facts_in_both_languages(client, gateway, talked) -> None:
    _, headers = gateway
    memories = (
        await client.get(
            f"/v1/relationships/{talked}/memories", params={"active": "true"}, headers=headers
        )
    ).json()["items"]
    names = {(m["subject"], m["predicate"], m["object"]) for m in memories}
    assert ("user.dog", "name", "mochi") in names
    assert ("user.cat", "name", "团子") in names


async def test_the_session_summary_names_topics_and_repeats_no_fact(
    client, gateway, talked
) -> None:
    _, headers = gateway
    memories = (
        await client.get(
            f"/v1/relationships/{talked}/memories", params={"active": "true"}, headers=headers
        )
    ).json()["items"]
    [summary] = [m for m in memories if m["memory_type"] == "summary"]
    facts = [m["content"] for m in memories if m["memory_type"] != "summary"]
    assert not any(fact in summary["content"] for fact in facts)
    assert "护士" not in summary["content"]
    assert "nurse" not in summary["content"]
    assert summary["content"].startswith(("这次聊到：", "Talked about: "))


async def test_a_question_no_word_of_which_a_memory_holds_still_finds_it(client, gateway) -> None:
    # Manual memories, no word in common with the question even after expansion, and
    # possibly every cosine under the floor: the nearest memories still come back.
    _, headers = gateway
    rid = await _relationship(client, headers, "no-word")
    body = {
        "memories": [
            {"content": "The user works night shifts at the children's hospital"},
            {"content": "用户周末常去爬山"},
        ]
    }
    made = await client.post(f"/v1/relationships/{rid}/memories/batch", json=body, headers=headers)
    assert made.status_code == 200, made.text
    search = f"/v1/relationships/{rid}/search"
    body = {"query": "Where do I spend my evenings?", "k": 5}
    for _ in range(10):  # the fallback needs the query's vector: past a busy machine's
        result = (await client.post(search, json=body, headers=headers)).json()
        if "embedding" not in result["degraded"]:  # embedding deadline, ask again
            break
    assert result["degraded"] == []
    assert result["items"], "a plain question came back with nothing"
    assert len(result["items"]) <= 5
    assert all(hit["explanation"]["vector_rank"] for hit in result["items"])
    assert not any(hit["explanation"]["relevant"] for hit in result["items"])  # and says so


@pytest.mark.parametrize(
    ("loved", "stopped", "word"),
    [
        ("我特别喜欢吃辣", "我现在不吃辣了", "辣"),
        ("I really love spicy food.", "I don't eat spicy food anymore.", "spicy"),
    ],
)
async def test_no_summary_keeps_asserting_a_superseded_fact(
    client, gateway, celery_worker, loved: str, stopped: str, word: str
) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, f"stale-{word}")
    at = datetime.now(UTC) - timedelta(days=2)
    await _session(client, headers, rid, "s1", [("user", loved)], at)
    await _wait_extracted(client, headers, rid, "s1")
    await _session(client, headers, rid, "s2", [("user", stopped)], at + timedelta(days=1))
    memories = await _wait_extracted(client, headers, rid, "s2")
    active = [m["content"] for m in memories]
    assert not any(loved.rstrip(".").split()[-1] in text for text in active if "love" in text)
    assert not any("喜欢吃辣" in text or "loves spicy" in text for text in active)
    body = {"relationship_id": rid, "query": word}
    context = (await client.post("/v1/context", json=body, headers=headers)).json()["context"]
    assert "喜欢吃辣" not in context
    assert "love" not in context.split("## What you remember")[-1].lower()


async def test_a_summary_written_with_facts_loses_the_one_superseded(
    client, gateway, celery_worker
) -> None:
    # Summaries from before decision 0055 list facts; one such, of session l1, is imported.
    _, headers = gateway
    rid = await _relationship(client, headers, "legacy-summary")
    at = datetime.now(UTC) - timedelta(days=2)
    await _session(client, headers, rid, "l1", [("user", "我特别喜欢吃辣")], at)
    await _wait_extracted(client, headers, rid, "l1")
    legacy = await client.post(
        f"/v1/relationships/{rid}/memories",
        json={
            "content": "用户特别喜欢吃辣；用户住在深圳",
            "memory_type": "summary",
            "session_id": "l1",
            "occurred_at": at.isoformat(),
        },
        headers=headers,
    )
    assert legacy.status_code == 201, legacy.text
    await _session(client, headers, rid, "l2", [("user", "我现在不吃辣了")], at + timedelta(days=1))
    await _wait_extracted(client, headers, rid, "l2")
    url = f"/v1/relationships/{rid}/memories/{legacy.json()['id']}"
    rewritten = (await client.get(url, headers=headers)).json()
    assert rewritten["content"] == "用户住在深圳"
    history = (await client.get(f"{url}/history", headers=headers)).json()["items"]
    assert history[-1]["change"] == "edited"
    assert "superseded" in history[-1]["reason"]
