"""The context, knowledge and extraction sections of the tenant settings: validated,
and in force where they are used: POST /v1/context's token budget and knowledge
deadline (through the API process's settings cache) and the worker's LLM extraction
step (through the worker's own cache: a change applies without a restart)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from redis import Redis as SyncRedis
from sqlalchemy import text

from tests.conftest import start_worker, stop_worker
from tests.integration.test_knowledge_context import (
    INJECTION,
    SlowEmbedder,
    engine_for,
    indexed_base,
)
from tests.providers_server import FakeOpenAIServer
from tests.support import resolve_body
from tether.app import bind_resources, create_app, with_outer_middleware
from tether.core.ids import TenantId
from tether.core.settings import Settings
from tether.memories.llm_budget import counter_key
from tether.recall.services import warm_up

pytestmark = pytest.mark.integration

ENGLISH = [
    "I have been learning to play the cello for three years and practise every evening",
    "My sister lives in Lyon and we talk on the phone every Sunday afternoon",
    "I am training for a half marathon in the spring, running five times a week",
]
CHINESE = [
    "我学大提琴已经三年了，每天晚上都会练习一个小时",
    "我妹妹住在里昂，我们每个星期天下午都会打电话聊天",
    "我正在为春天的半程马拉松做准备，每周跑步五次",
]


async def _put(client, tenant, change: dict) -> httpx.Response:  # type: ignore[no-untyped-def]
    etag = (await client.get("/v1/tenant/settings", headers=tenant.admin)).headers["etag"]
    return await client.put(
        "/v1/tenant/settings", json=change, headers=tenant.admin | {"If-Match": etag}
    )


async def _turns(client, headers, rid: str, session_id: str, texts: list[str]) -> None:  # type: ignore[no-untyped-def]
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
    response = await client.post(
        f"/v1/relationships/{rid}/turns", json={"turns": turns}, headers=headers
    )
    assert response.status_code == 202, response.text


async def test_sections_default_to_the_deployment_and_are_validated(client, make_tenant) -> None:
    tenant = await make_tenant()
    current = (await client.get("/v1/tenant/settings", headers=tenant.admin)).json()
    assert current["context"] == {"default_max_tokens": None, "section_tokens": {}}
    assert current["knowledge"] == {"query_timeout_ms": None}
    assert current["extraction"] == {
        "llm_enabled": True,
        "llm_daily_calls": None,
        "llm_provider": None,
        "llm_model": None,
        "llm_base_url": None,
    }
    for bad in (
        {"context": {"default_max_tokens": 100}},
        {"context": {"default_max_tokens": 40_000}},
        {"context": {"section_tokens": {"memory": -1}}},
        {"context": {"section_tokens": {"记忆": 100}}},
        {"knowledge": {"query_timeout_ms": 20_000}},
        {"knowledge": {"query_timeout_ms": 10}},
        {"extraction": {"llm_daily_calls": -1}},
        {"extraction": {"llm_enabled": "关闭"}},
        {"extraction": {"provider_url": "http://example.com"}},
        {"embedding": {"dimension": 768}},
    ):
        refused = await _put(client, tenant, bad)
        assert refused.status_code == 422, (bad, refused.text)
        assert refused.headers["content-type"].startswith("application/problem+json")
    change = {
        "context": {"default_max_tokens": 400, "section_tokens": {"recent": 150}},
        "knowledge": {"query_timeout_ms": 250},
        "extraction": {"llm_enabled": False, "llm_daily_calls": 100},
        "reason": "成本控制",
    }
    written = await _put(client, tenant, change)
    assert written.status_code == 200, written.text
    body = written.json()
    assert body["context"] == {"default_max_tokens": 400, "section_tokens": {"recent": 150}}
    assert body["extraction"] == change["extraction"] | {
        "llm_provider": None,
        "llm_model": None,
        "llm_base_url": None,
    }
    audit = await client.get(
        "/v1/audit", params={"action": "settings.update"}, headers=tenant.admin
    )
    [event] = audit.json()["items"]
    assert event["detail"]["sections"] == ["context", "extraction", "knowledge"]


@pytest.mark.parametrize("texts", [ENGLISH, CHINESE], ids=["en", "zh"])
async def test_a_smaller_token_budget_yields_a_shorter_context(
    client, make_tenant, texts: list[str]
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid = (await client.post("/v1/resolve", json=resolve_body("budget"), headers=gateway)).json()[
        "relationship_id"
    ]
    await _turns(client, gateway, rid, "s1", texts)
    request = {"relationship_id": rid, "query": texts[0][:20], "recent_turns": 6}

    async def build(extra: dict | None = None) -> dict:
        response = await client.post("/v1/context", json=request | (extra or {}), headers=gateway)
        assert response.status_code == 200, response.text
        return response.json()

    before = await build()
    recent = [i["text"] for i in before["items"] if i["section"] == "recent"]
    assert sorted(recent) == sorted(texts)
    assert before["budget"]["recent"]["limit"] == 600  # the deployment's default

    change = {"context": {"default_max_tokens": 400, "section_tokens": {"recent": 60}}}
    assert (await _put(client, tenant, change)).status_code == 200
    after = await build()  # this process forgot its cached copy on PUT: in force at once
    assert after["budget"]["recent"]["limit"] == 60
    assert after["budget"]["recent"]["dropped"] >= 1
    assert after["token_estimate"] <= 400
    assert len(after["context"]) < len(before["context"])
    # A request's own max_tokens still wins over the tenant's default.
    asked = await build({"max_tokens": 200})
    assert asked["token_estimate"] <= 200

    # Another tenant keeps the deployment's budgets.
    other = await make_tenant()
    other_gateway = await other.key("gateway")
    other_rid = (
        await client.post("/v1/resolve", json=resolve_body("budget"), headers=other_gateway)
    ).json()["relationship_id"]
    await _turns(client, other_gateway, other_rid, "s1", texts)
    theirs = await client.post(
        "/v1/context", json=request | {"relationship_id": other_rid}, headers=other_gateway
    )
    assert theirs.json()["budget"]["recent"]["limit"] == 600


@pytest.fixture(scope="module")
def settings(settings: Settings) -> Settings:
    """The deployment's knowledge deadline far off (10 s): only a tenant's own deadline
    can make the context go on without knowledge here."""
    embedding = settings.embedding.model_copy(update={"query_timeout_ms": 10_000})
    knowledge = settings.knowledge.model_copy(update={"query_timeout_ms": 10_000})
    return settings.model_copy(update={"embedding": embedding, "knowledge": knowledge})


@pytest.fixture
async def slow_knowledge_client(settings, resources):  # type: ignore[no-untyped-def]
    """The real app, its knowledge engine's query embedding taking 0.4 s."""
    app = create_app(settings)
    bind_resources(app, resources)
    await asyncio.to_thread(warm_up, settings, app.state.embedder)
    app.state["knowledge_engine"] = (resources, engine_for(resources, SlowEmbedder(0.4)))
    transport = httpx.ASGITransport(app=with_outer_middleware(app))
    async with httpx.AsyncClient(transport=transport, base_url="http://tether") as http:
        yield http
    app.state.partitions.close()
    await app.state.access_log.flush()


@pytest.mark.parametrize(
    ("query", "expected"),
    [("when does the kettle switch off", "switches itself off"), ("水壶什么时候断电", "自动断电")],
    ids=["en", "zh"],
)
async def test_the_tenants_knowledge_deadline_applies_to_the_context(
    slow_knowledge_client, resources, make_tenant, query: str, expected: str
) -> None:
    client = slow_knowledge_client
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    await indexed_base(client, resources, tenant, INJECTION + "\n\n水壶在水烧开后会自动断电。")
    rid = (await client.post("/v1/resolve", json=resolve_body("kb"), headers=gateway)).json()[
        "relationship_id"
    ]
    request = {"relationship_id": rid, "query": query, "knowledge_enabled": True}
    patient = (await client.post("/v1/context", json=request, headers=gateway)).json()
    assert "knowledge_timeout" not in patient["degraded"]
    assert any(expected in i["text"] for i in patient["items"] if i["section"] == "knowledge")

    assert (await _put(client, tenant, {"knowledge": {"query_timeout_ms": 100}})).status_code == 200
    started = time.perf_counter()
    hurried = (await client.post("/v1/context", json=request, headers=gateway)).json()
    assert "knowledge_timeout" in hurried["degraded"]
    assert not [i for i in hurried["items"] if i["section"] == "knowledge"]
    assert time.perf_counter() - started < 0.4 + 0.3  # it did not wait for the embedder


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
            # The worker re-reads a tenant's settings at most this often.
            "TETHER_IDENTITY__TENANT_SETTINGS_TTL_SECONDS": "1",
        },
    )
    yield worker
    stop_worker(worker)


async def _extracted(client, headers, rid: str, session_id: str) -> list[str]:  # type: ignore[no-untyped-def]
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
            memories = await client.get(
                f"/v1/relationships/{rid}/memories", params={"active": "true"}, headers=headers
            )
            return [m["content"] for m in memories.json()["items"]]
        await asyncio.sleep(0.25)
    raise AssertionError("the session was not extracted")


def _chat_calls(server: FakeOpenAIServer) -> int:
    return len([r for r in server.requests if r.path.endswith("/chat/completions")])


@pytest.mark.worker
@pytest.mark.parametrize(
    ("said", "rules_found"), [("I love hiking", "hiking"), ("我喜欢喝茶", "茶")], ids=["en", "zh"]
)
async def test_extraction_settings_reach_the_running_worker(
    client, make_tenant, settings, chat_server, llm_worker, said: str, rules_found: str
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid = (await client.post("/v1/resolve", json=resolve_body("llm"), headers=gateway)).json()[
        "relationship_id"
    ]
    chat_server.chat_content = json.dumps({"memories": [], "forget": []})

    async def session(session_id: str) -> int:
        """Extract one session; how many LLM calls it made."""
        chat_server.reset()
        chat_server.chat_content = json.dumps({"memories": [], "forget": []})
        await _turns(client, gateway, rid, session_id, [f"{said} ({session_id})"])
        ended = await client.post(
            f"/v1/relationships/{rid}/sessions/{session_id}/end", headers=gateway
        )
        assert ended.status_code == 202, ended.text
        contents = await _extracted(client, gateway, rid, session_id)
        assert any(rules_found in c for c in contents)  # the rules ran either way
        return _chat_calls(chat_server)

    assert await session("on") == 1  # the default: the deployment's LLM step runs

    assert (await _put(client, tenant, {"extraction": {"llm_enabled": False}})).status_code == 200
    await asyncio.sleep(1.5)  # the worker's cache TTL; the same worker process, no restart
    assert await session("off") == 0

    budget = {"extraction": {"llm_enabled": True, "llm_daily_calls": 1}}
    assert (await _put(client, tenant, budget)).status_code == 200
    await asyncio.sleep(1.5)
    assert await session("budget-1") == 1
    assert await session("budget-2") == 0  # past today's budget: rules only
    redis = SyncRedis.from_url(settings.require_redis_url())
    key = counter_key(TenantId(uuid.UUID(tenant.id)), datetime.now(UTC))
    assert int(redis.get(key) or 0) == 2
    assert 0 < redis.ttl(key) <= 2 * 86_400


async def test_a_section_a_newer_release_wrote_is_read_past_and_kept(
    client, make_tenant, superuser
) -> None:
    """Rolling upgrade: a newer pod stored a section this release does not know. This
    release still reads the settings (no 500), and its own write keeps that section."""
    tenant = await make_tenant()
    assert (await _put(client, tenant, {"knowledge": {"query_timeout_ms": 300}})).is_success
    async with superuser.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO tenant_settings (tenant_id, version, document) "
                "SELECT tenant_id, version + 1, document || CAST(:extra AS jsonb) "
                "FROM tenant_settings WHERE tenant_id = :t ORDER BY version DESC LIMIT 1"
            ),
            {"extra": json.dumps({"dreams": {"lucid": True}}), "t": tenant.id},
        )
    read = await client.get("/v1/tenant/settings", headers=tenant.admin)
    assert read.status_code == 200, read.text
    assert read.json()["knowledge"] == {"query_timeout_ms": 300}
    assert "dreams" not in read.json()
    assert (await _put(client, tenant, {"knowledge": {"query_timeout_ms": 400}})).is_success
    async with superuser.connect() as conn:
        stored = (
            await conn.execute(
                text(
                    "SELECT document FROM tenant_settings WHERE tenant_id = :t "
                    "ORDER BY version DESC LIMIT 1"
                ),
                {"t": tenant.id},
            )
        ).scalar_one()
    assert stored["dreams"] == {"lucid": True}
    assert stored["knowledge"] == {"query_timeout_ms": 400}
    audit = await client.get(
        "/v1/audit", params={"action": "settings.update"}, headers=tenant.admin
    )
    assert audit.json()["items"][-1]["detail"]["sections"] == ["knowledge"]
