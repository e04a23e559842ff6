"""The optional LLM step in the real worker: one call per session to an
OpenAI-compatible server we run; its validated memories join the rules' ones, and a
broken answer leaves the rules' memories as they are."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import start_worker, stop_worker
from tests.providers_server import FakeOpenAIServer
from tests.support import resolve_body

pytestmark = [pytest.mark.integration, pytest.mark.worker]


@pytest.fixture(scope="module")
def chat_server():  # type: ignore[no-untyped-def]
    server = FakeOpenAIServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def llm_worker(settings, chat_server):  # type: ignore[no-untyped-def]
    worker = start_worker(
        settings,
        {
            "TETHER_LLM__ENABLED": "true",
            "TETHER_LLM__BASE_URL": chat_server.base_url,
            "TETHER_LLM__MODEL": "test-chat",
            "TETHER_LLM__TIMEOUT_SECONDS": "2",
            "TETHER_LLM__MAX_RETRIES": "0",
        },
    )
    yield worker
    stop_worker(worker)


async def _extracted(client, headers, rid: str, session_id: str) -> list[dict]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        log = (
            await client.get(
                f"/v1/relationships/{rid}/consolidations",
                params={"session_id": session_id},
                headers=headers,
            )
        ).json()["items"]
        if log:
            return (
                await client.get(
                    f"/v1/relationships/{rid}/memories", params={"active": "true"}, headers=headers
                )
            ).json()["items"]
        await asyncio.sleep(0.25)
    raise AssertionError("the session was not extracted")


async def _session(client, headers, rid: str, session_id: str, texts: list[str]) -> None:
    at = datetime.now(UTC) - timedelta(minutes=5)
    turns = [
        {
            "session_id": session_id,
            "role": "user",
            "text": t,
            "at": (at + timedelta(seconds=i)).isoformat(),
        }
        for i, t in enumerate(texts)
    ]
    assert (
        await client.post(f"/v1/relationships/{rid}/turns", json={"turns": turns}, headers=headers)
    ).status_code == 202
    assert (
        await client.post(f"/v1/relationships/{rid}/sessions/{session_id}/end", headers=headers)
    ).status_code == 202


async def test_llm_memories_join_the_rules_ones(
    client, make_tenant, chat_server, llm_worker
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid = (await client.post("/v1/resolve", json=resolve_body("llm"), headers=headers)).json()[
        "relationship_id"
    ]
    chat_server.reset()
    chat_server.chat_content = json.dumps(
        {
            "memories": [
                {
                    "memory_type": "fact",
                    "subject": "user.sister",
                    "predicate": "lives_in",
                    "object": "Lyon",
                    "polarity": "affirmed",
                    "content": "The user's sister moved to Lyon",
                    "importance": 0.6,
                    "confidence": 0.8,
                    "exclusive": True,
                    "source_turns": [1],
                    "expires_at": None,
                }
            ],
            "forget": [],
        }
    )
    await _session(
        client,
        headers,
        rid,
        "l1",
        ["I love hiking", "my sister just packed up and went off to Lyon"],
    )
    contents = [m["content"] for m in await _extracted(client, headers, rid, "l1")]
    assert "The user's sister moved to Lyon" in contents
    assert any("hiking" in c for c in contents)
    chat_requests = [r for r in chat_server.requests if r.path.endswith("/chat/completions")]
    assert len(chat_requests) == 1  # one call per session


async def test_a_broken_llm_answer_keeps_the_rules_memories(
    client, make_tenant, chat_server, llm_worker
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid = (await client.post("/v1/resolve", json=resolve_body("llm-bad"), headers=headers)).json()[
        "relationship_id"
    ]
    chat_server.reset()
    chat_server.chat_content = '{"memories": [{"content": "not valid"}], "forget": []}'
    await _session(client, headers, rid, "b1", ["我喜欢喝茶"])
    contents = [m["content"] for m in await _extracted(client, headers, rid, "b1")]
    assert any("茶" in c for c in contents)
    assert "not valid" not in contents
