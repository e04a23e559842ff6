"""The recap for the start of a session, through the API and the real worker: sessions
on several days in Chinese and English, plans that come due, pass, or are called off,
feelings, open topics, the "last time" context section, and who may read it."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import httpx
import pytest

from tests.integration.conversation_support import relationship, say, wait_extracted

pytestmark = [pytest.mark.integration, pytest.mark.worker]

# Three weeks ago at 10:00: every turn is in the past, every date is computed here.
T0 = (datetime.now(UTC) - timedelta(days=21)).replace(hour=10, minute=0, second=0, microsecond=0)


def next_week(weekday: int) -> date:
    """The ``weekday`` of the week after T0's (0 = Monday)."""
    return (T0 - timedelta(days=T0.weekday()) + timedelta(weeks=1, days=weekday)).date()


@pytest.fixture(scope="module")
async def gateway(make_tenant):  # type: ignore[no-untyped-def]
    tenant = await make_tenant()
    return tenant, await tenant.key("gateway")


async def _recap(
    client: httpx.AsyncClient, headers: dict[str, str], rid: str, as_of: datetime, **params: str
) -> dict:
    response = await client.get(
        f"/v1/relationships/{rid}/recap",
        params={"as_of": as_of.isoformat(), **params},
        headers=headers,
    )
    assert response.status_code == 200, response.text
    return response.json()


async def _three_sessions(client, headers, superuser, rid: str, lines: list[list[str]]) -> None:
    for day, session in zip((0, 2, 4), lines, strict=True):
        turns = [("user" if i % 2 == 0 else "assistant", text) for i, text in enumerate(session)]
        await say(client, headers, rid, f"s{day}", turns, T0 + timedelta(days=day))
        await wait_extracted(superuser, rid, f"s{day}")


async def test_chinese_recap_over_three_sessions(client, gateway, celery_worker, superuser) -> None:
    _, headers = gateway
    rid = await relationship(client, headers, "recap-zh")
    await _three_sessions(
        client,
        headers,
        superuser,
        rid,
        [
            ["下周五我要考雅思，有点紧张", "加油！", "我打算去杭州旅行", "听起来不错"],
            ["杭州的旅行取消了", "好可惜", "明天要去看牙医", "祝顺利"],
            [
                "最近压力好大",
                "怎么了？",
                "工作上的事，这个下次再聊吧",
                "好的",
                "你觉得我该换工作吗？",
            ],
        ],
    )
    exam = next_week(4)
    # The morning after the third session: the dentist is past, the exam ahead.
    early = await _recap(client, headers, rid, T0 + timedelta(days=4, hours=20))
    plans = {p["content"]: p for p in early["plans"]}
    assert not any("杭州" in content for content in plans), "a cancelled plan is not open"
    [exam_plan] = [p for c, p in plans.items() if "雅思" in c]
    assert exam_plan["status"] == "upcoming"
    assert exam_plan["due_from"] == exam.isoformat() == exam_plan["due_until"]
    assert exam_plan["memory_ids"]
    assert exam_plan["turn_ids"]
    [dentist] = [p for c, p in plans.items() if "牙医" in c]
    assert dentist["status"] == "overdue"
    assert dentist["due_from"] == (T0 + timedelta(days=3)).date().isoformat()
    assert early["last_session"]["session_id"] == "s4"
    assert early["last_session"]["summary"]
    assert early["last_session"]["memory_ids"]
    assert early["seconds_since_last_contact"] > 15 * 3600
    topics = {t["reason"]: t for t in early["unresolved_topics"]}
    assert "下次再聊" in topics["deferred"]["text"]
    assert "换工作" in topics["unanswered_question"]["text"]
    assert topics["deferred"]["turn_ids"]
    feelings = [f["feeling"] for f in early["feelings"]]
    assert feelings[0] == "紧张"
    assert "压力大" in feelings
    assert early["trajectory"] in ("steady", "worsening")
    assert all(f["memory_ids"] for f in early["feelings"])
    assert early["empty"] is False
    # On the day of the exam it is due; the day after, overdue ("how did it go?").
    on_the_day = datetime.combine(exam, datetime.min.time(), UTC) + timedelta(hours=9)
    due = {
        p["content"]: p["status"] for p in (await _recap(client, headers, rid, on_the_day))["plans"]
    }
    assert [s for c, s in due.items() if "雅思" in c] == ["due"]
    after = await _recap(client, headers, rid, on_the_day + timedelta(days=1))
    assert [p["status"] for p in after["plans"] if "雅思" in p["content"]] == ["overdue"]
    # Weeks later the exam is no longer worth bringing up.
    later = await _recap(client, headers, rid, on_the_day + timedelta(days=30))
    assert not [p for p in later["plans"] if "雅思" in p["content"]]


async def test_english_recap_keeps_undated_plans_as_text(
    client, gateway, celery_worker, superuser
) -> None:
    _, headers = gateway
    rid = await relationship(client, headers, "recap-en")
    await _three_sessions(
        client,
        headers,
        superuser,
        rid,
        [
            [
                "I have my driving test next Friday.",
                "Good luck!",
                "I plan to visit Paris with my sister.",
                "Lovely.",
            ],
            [
                "The Paris trip got cancelled.",
                "Oh no.",
                "I feel anxious.",
                "Why?",
                "I plan to move to Berlin in two weeks.",
                "Big step!",
            ],
            [
                "I feel happy today.",
                "Great!",
                "I plan to retire in 2040.",
                "Nice",
                "Let's talk about my landlord later.",
            ],
        ],
    )
    as_of = T0 + timedelta(days=4, hours=2)
    recap = await _recap(client, headers, rid, as_of)
    by_text = {p["content"]: p for p in recap["plans"]}
    assert not any("Paris" in c for c in by_text)
    [test] = [p for c, p in by_text.items() if "driving test" in c]
    assert test["status"] == "upcoming"
    assert test["due_from"] == next_week(4).isoformat()
    [berlin] = [p for c, p in by_text.items() if "Berlin" in c]
    assert berlin["status"] == "upcoming"
    assert berlin["due_from"] == (T0 + timedelta(days=16)).date().isoformat()
    [retire] = [p for c, p in by_text.items() if "retire" in c]
    assert retire["status"] == "undated"
    assert retire["due_from"] is None
    assert retire["unresolved"] == "far_future"
    assert [f["feeling"] for f in recap["feelings"]] == ["anxious", "happy"]
    assert recap["trajectory"] == "improving"
    assert recap["feelings"][0]["current"] is False  # the newer state superseded it
    assert [t["reason"] for t in recap["unresolved_topics"]] == ["deferred"]
    # The session starting now is not "last time".
    current = await _recap(client, headers, rid, as_of, session_id="s4")
    assert current["last_session"]["session_id"] == "s2"


async def test_no_history_is_an_empty_recap(client, gateway) -> None:
    _, headers = gateway
    rid = await relationship(client, headers, "recap-new")
    response = await client.get(f"/v1/relationships/{rid}/recap", headers=headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["empty"] is True
    assert body["plans"] == []
    assert body["last_session"] is None
    assert body["last_contact_at"] is None
    assert body["trajectory"] is None


async def test_recap_refuses_a_naive_time_and_other_tenants(client, gateway, make_tenant) -> None:
    _, headers = gateway
    rid = await relationship(client, headers, "recap-auth")
    naive = await client.get(
        f"/v1/relationships/{rid}/recap", params={"as_of": "2026-01-01T10:00:00"}, headers=headers
    )
    assert naive.status_code == 422
    other = await make_tenant()
    foreign = await client.get(f"/v1/relationships/{rid}/recap", headers=await other.key("gateway"))
    assert foreign.status_code == 404


async def test_private_notes_stay_out_of_a_gateway_s_recap(client, gateway) -> None:
    tenant, headers = gateway
    rid = await relationship(client, headers, "recap-private")
    creator = await tenant.key("creator", "c-1")
    note = {
        "content": "私人备注：下周三回访这位用户",
        "memory_type": "commitment",
        "private_to_creator": True,
    }
    made = await client.post(f"/v1/relationships/{rid}/memories", json=note, headers=creator)
    assert made.status_code == 201, made.text
    plan = {"content": "用户打算下周三去体检", "memory_type": "commitment"}
    await client.post(f"/v1/relationships/{rid}/memories", json=plan, headers=headers)
    seen_by_gateway = (await client.get(f"/v1/relationships/{rid}/recap", headers=headers)).json()
    seen_by_creator = (await client.get(f"/v1/relationships/{rid}/recap", headers=creator)).json()
    note_id = made.json()["id"]
    assert note_id not in {i for p in seen_by_gateway["plans"] for i in p["memory_ids"]}
    assert note_id in {i for p in seen_by_creator["plans"] for i in p["memory_ids"]}
    assert len(seen_by_gateway["plans"]) == 1


async def test_last_time_is_a_context_section_only_when_asked(client, gateway) -> None:
    _, headers = gateway
    rid = await relationship(client, headers, "recap-context")
    plan = {"content": "The user plans to run a marathon next month", "memory_type": "commitment"}
    await client.post(f"/v1/relationships/{rid}/memories", json=plan, headers=headers)
    body = {"relationship_id": rid, "query": "hi"}
    plain = (await client.post("/v1/context", json=body, headers=headers)).json()
    assert "last_time" not in plain["budget"]
    assert not [i for i in plain["items"] if i["section"] == "last_time"]
    asked = await client.post("/v1/context", json={**body, "last_time": True}, headers=headers)
    assert asked.status_code == 200, asked.text
    items = [i for i in asked.json()["items"] if i["section"] == "last_time"]
    assert [i["kind"] for i in items] == ["plan"]
    assert "## Last time with this user" in asked.json()["context"]
