"""The recap's optional LLM summary, against an OpenAI-compatible server we run: one
strict-JSON call when a provider is configured, the rules' summary when its answer is
broken, and never a call for the context's "last time" section."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from tests.integration.conversation_support import relationship, say, wait_extracted
from tests.providers_server import FakeOpenAIServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.worker]


@pytest.fixture(scope="module")
def chat_server():  # type: ignore[no-untyped-def]
    server = FakeOpenAIServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def settings(settings, chat_server):  # type: ignore[no-untyped-def]
    """This module's API has an LLM configured (its worker does not)."""
    llm = settings.llm.model_copy(
        update={
            "enabled": True,
            "base_url": chat_server.base_url,
            "model": "test-chat",
            "timeout_seconds": 2.0,
            "max_retries": 0,
        }
    )
    return settings.model_copy(update={"llm": llm})


async def test_the_recap_summary_comes_from_the_llm_when_configured(
    client, make_tenant, celery_worker, superuser, chat_server
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid = await relationship(client, headers, "recap-llm")
    at = datetime.now(UTC) - timedelta(days=1)
    await say(client, headers, rid, "s1", [("user", "下周五我要考雅思，有点紧张")], at)
    await wait_extracted(superuser, rid, "s1")
    chat_server.reset()
    chat_server.chat_content = json.dumps({"summary": "用户下周五考雅思，有点紧张。"})
    path = f"/v1/relationships/{rid}/recap"
    recap = (await client.get(path, headers=headers)).json()
    assert recap["last_session"]["summary_source"] == "llm"
    assert recap["last_session"]["summary"] == "用户下周五考雅思，有点紧张。"
    [request] = chat_server.requests
    assert "雅思" in json.dumps(request.body, ensure_ascii=False)
    # A broken answer: the stored summary, no error.
    chat_server.enqueue(Reply(body={"choices": [{"message": {"content": "not json"}}]}))
    fallback = (await client.get(path, headers=headers)).json()
    assert fallback["last_session"]["summary_source"] == "memory"
    # The stored session summary names topics, not facts (decision 0055).
    assert fallback["last_session"]["summary"].startswith("这次聊到")
    # The context's section never calls the model.
    chat_server.reset()
    body = {"relationship_id": rid, "query": "hi", "last_time": True}
    context = await client.post("/v1/context", json=body, headers=headers)
    assert context.status_code == 200, context.text
    assert chat_server.requests == []
