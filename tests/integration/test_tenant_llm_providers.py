"""Each tenant's extraction calls the LLM provider its settings name (decision 0075):
two real local OpenAI-protocol servers, tenants choosing among the deployment's named
providers, refused URLs never stored, and a change reaching the running worker without
a restart. Also the privacy section (a new relationship's mode) and the read-only
limits in the same document."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.conftest import start_worker, stop_worker
from tests.integration.test_tenant_settings_sections import _extracted, _put, _turns
from tests.providers_server import FakeOpenAIServer
from tests.support import resolve_body
from tether.core.settings import NamedLlmProvider, ProvidersSettings, Settings

pytestmark = pytest.mark.integration

EMPTY = json.dumps({"memories": [], "forget": []})


@pytest.fixture(scope="module")
def alpha():  # type: ignore[no-untyped-def]
    server = FakeOpenAIServer().start()
    server.chat_content = EMPTY
    yield server
    server.stop()


@pytest.fixture(scope="module")
def beta():  # type: ignore[no-untyped-def]
    server = FakeOpenAIServer().start()
    server.chat_content = EMPTY
    yield server
    server.stop()


def _named(alpha: FakeOpenAIServer, beta: FakeOpenAIServer) -> dict[str, dict[str, object]]:
    common = {"timeout_seconds": 2, "max_retries": 0}
    return {
        "alpha": {"base_url": alpha.base_url, "model": "alpha-model", "api_key": "key-alpha"}
        | common,
        "beta": {"base_url": beta.base_url, "model": "beta-model"} | common,
    }


def _beta_host(beta: FakeOpenAIServer) -> str:
    return beta.base_url.split("/")[2]  # 127.0.0.1:<port>: that port only


@pytest.fixture(scope="module")
def settings(settings: Settings, alpha, beta) -> Settings:  # type: ignore[no-untyped-def]
    named = {k: NamedLlmProvider.model_validate(v) for k, v in _named(alpha, beta).items()}
    providers = ProvidersSettings(llm=named, allowed_hosts=[_beta_host(beta)])
    return settings.model_copy(update={"providers": providers})


@pytest.fixture(scope="module")
def worker(settings: Settings, alpha, beta):  # type: ignore[no-untyped-def]
    env = {
        # The deployment's own LLM stays off: only tenants that name a provider call one.
        "TETHER_LLM__ENABLED": "false",
        "TETHER_PROVIDERS__LLM": json.dumps(_named(alpha, beta)),
        "TETHER_PROVIDERS__ALLOWED_HOSTS": json.dumps([_beta_host(beta)]),
        "TETHER_IDENTITY__TENANT_SETTINGS_TTL_SECONDS": "1",
    }
    started = start_worker(settings, env)
    yield started
    stop_worker(started)


def _calls(server: FakeOpenAIServer) -> list[tuple[str, str | None]]:
    """(model, Authorization header) of each chat call the server received."""
    return [
        (r.body["model"], r.headers.get("Authorization"))
        for r in server.requests
        if r.path.endswith("/chat/completions")
    ]


async def _session(client, tenant, name: str) -> None:  # type: ignore[no-untyped-def]
    gateway = await tenant.key("gateway")
    resolved = await client.post("/v1/resolve", json=resolve_body(name), headers=gateway)
    rid = resolved.json()["relationship_id"]
    await _turns(client, gateway, rid, name, [f"I love hiking in the Alps ({name})"])
    ended = await client.post(f"/v1/relationships/{rid}/sessions/{name}/end", headers=gateway)
    assert ended.status_code == 202, ended.text
    contents = await _extracted(client, gateway, rid, name)
    assert any("hiking" in c for c in contents)  # the rules ran either way


async def test_refused_provider_choices_are_never_stored(client, make_tenant, beta) -> None:
    tenant = await make_tenant()
    before = await client.get("/v1/tenant/settings", headers=tenant.admin)
    other_port = "http://127.0.0.1:1/v1"  # the allowed host, another port
    for bad, field in (
        ({"llm_provider": "gamma"}, "extraction.llm_provider"),
        ({"llm_model": "m"}, "extraction.llm_model"),
        ({"llm_provider": "alpha", "llm_base_url": "ftp://127.0.0.1/"}, "extraction.llm_base_url"),
        (
            {"llm_provider": "alpha", "llm_base_url": "http://u:p@x.test/"},
            "extraction.llm_base_url",
        ),
        (
            {"llm_provider": "alpha", "llm_base_url": beta.base_url + "#f"},
            "extraction.llm_base_url",
        ),
        ({"llm_provider": "alpha", "llm_base_url": other_port}, "extraction.llm_base_url"),
        (
            {"llm_provider": "alpha", "llm_base_url": "http://169.254.169.254/"},
            "extraction.llm_base_url",
        ),
    ):
        response = await _put(client, tenant, {"extraction": bad})
        assert response.status_code == 422, (bad, response.text)
        assert response.json()["code"] == "provider_not_allowed"
        assert [e["field"] for e in response.json()["errors"]] == [field]
    for bad in ({"llm_provider": "Alpha!"}, {"llm_provider": "alpha", "llm_model": "a\nb"}):
        response = await _put(client, tenant, {"extraction": bad})
        assert response.status_code == 422, (bad, response.text)
    after = await client.get("/v1/tenant/settings", headers=tenant.admin)
    assert after.headers["etag"] == before.headers["etag"] == '"0"'  # nothing stored


@pytest.mark.worker
async def test_each_tenants_extraction_reaches_only_its_provider(
    client, make_tenant, alpha, beta, worker
) -> None:
    first, second, third = await make_tenant(), await make_tenant(), await make_tenant()
    choices = (
        (first, {"llm_provider": "alpha", "llm_model": "first-model"}),
        (second, {"llm_provider": "beta"}),
        # The alpha provider at beta's (allowed) URL: alpha's key must not go there.
        (
            third,
            {"llm_provider": "alpha", "llm_model": "third-model", "llm_base_url": beta.base_url},
        ),
    )
    for tenant, choice in choices:
        response = await _put(client, tenant, {"extraction": choice})
        assert response.status_code == 200, response.text
        assert response.json()["extraction"] | choice == response.json()["extraction"]
    for server in (alpha, beta):
        server.reset()
        server.chat_content = EMPTY

    await _session(client, first, "first-1")
    await _session(client, second, "second-1")
    await _session(client, third, "third-1")
    assert _calls(alpha) == [("first-model", "Bearer key-alpha")]
    assert sorted(_calls(beta), key=str) == [("beta-model", None), ("third-model", None)]

    # The first tenant moves to beta: the same worker process follows within its TTL.
    moved = await _put(client, first, {"extraction": {"llm_provider": "beta"}})
    assert moved.status_code == 200, moved.text
    await asyncio.sleep(1.5)
    alpha.reset()
    beta.reset()
    alpha.chat_content = beta.chat_content = EMPTY
    await _session(client, first, "first-2")
    assert _calls(alpha) == []
    assert _calls(beta) == [("beta-model", None)]

    # Rules only: no call anywhere.
    off = {"llm_enabled": False, "llm_provider": "beta"}
    assert (await _put(client, first, {"extraction": off})).status_code == 200
    await asyncio.sleep(1.5)
    beta.reset()
    await _session(client, first, "first-3")
    assert _calls(alpha) == _calls(beta) == []


async def test_new_relationships_start_in_the_tenants_privacy_mode(client, make_tenant) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")

    async def mode_of(user: str) -> str:
        resolved = await client.post("/v1/resolve", json=resolve_body(user), headers=gateway)
        rid = resolved.json()["relationship_id"]
        read = await client.get(f"/v1/relationships/{rid}", headers=tenant.admin)
        assert read.status_code == 200, read.text
        return str(read.json()["privacy_mode"])

    current = (await client.get("/v1/tenant/settings", headers=tenant.admin)).json()
    assert current["privacy"] == {"default_mode": "normal"}
    assert current["limits"]["turns_per_day"]["value"] >= 0  # read only, from /limits
    assert await mode_of("before") == "normal"
    changed = await _put(client, tenant, {"privacy": {"default_mode": "raw_only"}})
    assert changed.status_code == 200, changed.text
    assert await mode_of("after") == "raw_only"
    assert await mode_of("before") == "normal"  # existing relationships keep theirs
    refused = await _put(client, tenant, {"privacy": {"default_mode": "secret"}})
    assert refused.status_code == 422
    with_limits = await _put(client, tenant, {"limits": {}})
    assert with_limits.status_code == 422  # limits are changed at /v1/tenant/limits

    other = await make_tenant()  # another tenant's default is its own
    other_gateway = await other.key("gateway")
    resolved = await client.post("/v1/resolve", json=resolve_body("x"), headers=other_gateway)
    rid = resolved.json()["relationship_id"]
    read = await client.get(f"/v1/relationships/{rid}", headers=other.admin)
    assert read.json()["privacy_mode"] == "normal"
