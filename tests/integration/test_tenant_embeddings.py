"""Each tenant's vectors are made and compared by the embedding model its settings name
(decisions 0077-0079): two real local OpenAI-protocol embedding servers of different
dimensions, a tenant moving from one to the other, the re-embed run the change starts
(a real Celery worker), and recall during the run comparing only vectors of one model."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from tenancy.settings.cache import TenantSettingsCache
from tenancy.settings.schemas import EmbeddingTenantSettings, TenantSettingsWrite
from tenancy.settings.services import TenantSettingsService, etag
from tests.conftest import start_worker, stop_worker
from tests.integration.test_tenant_settings_sections import _put
from tests.providers_server import FakeOpenAIServer, Reply
from tests.support import count_sql, owner_sessions, resolved_relationship, wait_for_hot_copy
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.core.settings import NamedEmbeddingProvider, ProvidersSettings, Settings
from tether.core.tenant_sessions import tenant_transaction
from tether.knowledge.models import KnowledgeChunk
from tether.providers.offline import OfflineEmbeddingProvider
from tether.recall.models import Memory
from tether.recall.tenant_embedders import TenantEmbedders
from tether.reembed.services import STALE_AFTER, ReembedJob, resumable_runs
from tether.runtime.tenant_admin import OPERATOR_CLI

pytestmark = pytest.mark.integration

BASES = "/v1/knowledge-bases"
RUNS = "/v1/tenant/reembed-runs"
FACTS = ("I adore green tea", "My sister lives in Lyon", "I play the cello on Sundays")
DOCUMENT = "Kettle FAQ.\n\nThe kettle switches itself off when the water boils.\n\n" * 3


@pytest.fixture(scope="module")
def alpha():  # type: ignore[no-untyped-def]
    server = FakeOpenAIServer(dimension=8).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def beta():  # type: ignore[no-untyped-def]
    server = FakeOpenAIServer(dimension=12).start()
    yield server
    server.stop()


def _named(alpha: FakeOpenAIServer, beta: FakeOpenAIServer) -> dict[str, dict[str, object]]:
    common = {"timeout_seconds": 5, "max_retries": 0}
    return {
        "alpha": {"base_url": alpha.base_url, "model": "model-a", "dimension": 8} | common,
        "beta": {"base_url": beta.base_url, "model": "model-b", "dimension": 12} | common,
        # More than a halfvec stores: offered by the operator, refused to tenants.
        "huge": {"base_url": alpha.base_url, "model": "huge", "dimension": 20_000} | common,
    }


@pytest.fixture(scope="module")
def settings(settings: Settings, alpha, beta) -> Settings:  # type: ignore[no-untyped-def]
    named = {k: NamedEmbeddingProvider.model_validate(v) for k, v in _named(alpha, beta).items()}
    return settings.model_copy(update={"providers": ProvidersSettings(embedding=named)})


@pytest.fixture(scope="module")
def worker(settings: Settings, alpha, beta):  # type: ignore[no-untyped-def]
    env = {
        "TETHER_PROVIDERS__EMBEDDING": json.dumps(_named(alpha, beta)),
        "TETHER_IDENTITY__TENANT_SETTINGS_TTL_SECONDS": "1",
        "TETHER_WORKER__QUEUES": "memories,knowledge,turns",
    }
    started = start_worker(settings, env)
    yield started
    stop_worker(started)


async def _runs(client, tenant) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    response = await client.get(RUNS, headers=tenant.admin)
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


async def _run_ends(client, tenant, seconds: float = 60) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        runs = await _runs(client, tenant)
        if runs and runs[0]["status"] in ("done", "failed"):
            return runs[0]
        await asyncio.sleep(0.2)
    raise AssertionError(f"the re-embed run did not end: {await _runs(client, tenant)}")


async def _models(resources: Resources, tenant_id: str) -> tuple[set[Any], set[Any]]:
    """(model, dimension) of the tenant's memories, and the model of its chunks."""
    async with owner_sessions(resources)() as session:
        memories = await session.execute(
            select(Memory.embedding_model, Memory.embedding_dim).where(
                Memory.tenant_id == tenant_id, Memory.deleted_at.is_(None)
            )
        )
        chunks = await session.execute(
            select(KnowledgeChunk.embedding_model).where(KnowledgeChunk.tenant_id == tenant_id)
        )
        return {tuple(r) for r in memories}, {r[0] for r in chunks}


async def _search(client, gateway, rid: str, *, embedded: bool = False) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """A search; ``embedded``: one whose query embedding made its deadline (on a loaded
    machine the fake provider may miss it, and recall goes lexical, as designed)."""
    for _ in range(5):
        response = await client.post(
            f"/v1/relationships/{rid}/search", json={"query": "green tea", "k": 5}, headers=gateway
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        assert body["items"], body
        if not embedded or "embedding" not in body["degraded"]:
            return body
    raise AssertionError(f"the query embedding missed its deadline five times: {body}")


async def _query(client, tenant, base_id: str) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    response = await client.post(
        f"{BASES}/{base_id}/query", json={"query": "kettle water boils"}, headers=tenant.admin
    )
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    assert items
    return items


async def _indexed_base(client, tenant) -> str:  # type: ignore[no-untyped-def]
    created = await client.post(BASES, json={"name": "kb"}, headers=tenant.admin)
    assert created.status_code == 201, created.text
    base_id = str(created.json()["id"])
    upload = await client.post(
        f"{BASES}/{base_id}/documents",
        files={"file": ("kettle.txt", DOCUMENT.encode())},
        headers=tenant.admin,
    )
    assert upload.status_code in (201, 202), upload.text
    path = f"{BASES}/{base_id}/documents/{upload.json()['id']}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        document = (await client.get(path, headers=tenant.admin)).json()
        if document["status"] in ("ready", "failed"):
            assert document["status"] == "ready", document
            return base_id
        await asyncio.sleep(0.2)
    raise AssertionError("the document was not indexed")


async def _memories(client, gateway, rid: str, facts: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    for fact in facts:
        stored = await client.post(
            f"/v1/relationships/{rid}/memories", json={"content": fact}, headers=gateway
        )
        assert stored.status_code == 201, stored.text


async def _choose(
    resources: Resources, settings: Settings, tenant_id: TenantId, provider: str
) -> None:
    """The tenant's embedding choice, as from the CLI (no task sent)."""
    async with tenant_transaction(resources.sessions, tenant_id) as session:
        service = TenantSettingsService(session, tenant_id, OPERATOR_CLI, settings)
        current = await service.get()
        write = TenantSettingsWrite(embedding=EmbeddingTenantSettings(provider=provider))
        await service.put(write, etag(current.version))


async def test_refused_embedding_choices_are_never_stored(client, make_tenant) -> None:
    tenant = await make_tenant()
    for bad, why in (
        ({"provider": "gamma"}, "no embedding provider 'gamma'"),
        ({"provider": "huge"}, "16,000"),
    ):
        response = await _put(client, tenant, {"embedding": bad})
        assert response.status_code == 422, (bad, response.text)
        assert response.json()["code"] == "provider_not_allowed"
        errors = response.json()["errors"]
        assert [e["field"] for e in errors] == ["embedding.provider"]
        assert why in errors[0]["message"]
    for bad in ({"provider": "Alpha!"}, {"model": "model-a"}, {"provider": "alpha", "key": "k"}):
        response = await _put(client, tenant, {"embedding": bad})
        assert response.status_code == 422, (bad, response.text)
    current = await client.get("/v1/tenant/settings", headers=tenant.admin)
    assert current.headers["etag"] == '"0"'  # nothing stored
    assert current.json()["embedding"] == {"provider": None}
    assert await _runs(client, tenant) == []


async def test_a_tenant_on_the_deployments_model_pays_no_sql_for_it(
    client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    rid = await resolved_relationship(client, gateway, "hot-user")
    await _memories(client, gateway, rid, FACTS[:1])
    await _search(client, gateway, rid)  # the settings are cached from here on
    await wait_for_hot_copy(resources.hot_redis, rid)
    with count_sql(resources) as statements:
        hot = await _search(client, gateway, rid)
    assert hot["tier"] in ("local", "hot")
    assert any(h["explanation"]["vector_similarity"] is not None for h in hot["items"])
    assert not [s for s in statements if "tenant_settings" in s], statements


@pytest.mark.worker
async def test_a_tenant_moving_to_another_model_is_re_embedded_alone(
    client, make_tenant, resources, alpha, beta, worker
) -> None:
    moving, other = await make_tenant(), await make_tenant()
    chose = await _put(client, moving, {"embedding": {"provider": "alpha"}})
    assert chose.status_code == 200, chose.text
    assert chose.json()["embedding"] == {"provider": "alpha"}
    first = await _run_ends(client, moving)
    assert (first["status"], first["model"], first["dimension"]) == ("done", "model-a", 8)

    gateway, other_gateway = await moving.key("gateway"), await other.key("gateway")
    rid = await resolved_relationship(client, gateway, "moving-user")
    other_rid = await resolved_relationship(client, other_gateway, "other-user")
    await _memories(client, gateway, rid, FACTS)  # embedded by the API with model-a
    await _memories(client, other_gateway, other_rid, FACTS[:1])
    base_id = await _indexed_base(client, moving)  # embedded by the worker with model-a
    offline = OfflineEmbeddingProvider()
    other_before = await _models(resources, other.id)
    assert other_before[0] == {(offline.name, offline.dimension)}
    memories, chunks = await _models(resources, moving.id)
    assert (memories, chunks) == ({("model-a", 8)}, {"model-a"})

    found = await _search(client, gateway, rid, embedded=True)
    assert any(h["explanation"]["vector_similarity"] is not None for h in found["items"])
    await wait_for_hot_copy(resources.hot_redis, rid)  # the hot copy holds model-a's vectors
    assert any(
        h["explanation"]["vector_similarity"] is not None
        for h in await _query(client, moving, base_id)
    )

    # The move: the run's first call to model-b is held for 4 s, so the run is caught
    # before its first batch commits.
    beta.reset()
    beta.enqueue(Reply(delay=4.0))
    moved = await _put(client, moving, {"embedding": {"provider": "beta"}})
    assert moved.status_code == 200, moved.text
    deadline = time.monotonic() + 30
    while not beta.requests:
        assert time.monotonic() < deadline, "the re-embed run did not call model-b"
        await asyncio.sleep(0.05)
    running = (await _runs(client, moving))[0]
    assert (running["status"], running["model"], running["memories_total"]) == (
        "running",
        "model-b",
        len(FACTS),
    )
    assert await _models(resources, moving.id) == ({("model-a", 8)}, {"model-a"})
    during = await _search(client, gateway, rid, embedded=True)  # embedded by model-b
    assert during["tier"] == "cold"  # the hot copy of model-a's vectors is not used
    assert all(h["explanation"]["vector_similarity"] is None for h in during["items"])
    assert all(
        h["explanation"]["vector_similarity"] is None for h in await _query(client, moving, base_id)
    )

    done = await _run_ends(client, moving)
    assert done["status"] == "done", done
    assert done["memories_done"] == done["memories_total"] == len(FACTS)
    chunk_ids = await _chunks(resources, moving.id)
    assert chunk_ids
    assert done["chunks_done"] == done["chunks_total"] == len(chunk_ids)
    assert [r["status"] for r in await _runs(client, moving)] == ["done", "done"]
    assert await _models(resources, moving.id) == ({("model-b", 12)}, {"model-b"})
    assert await _models(resources, other.id) == other_before  # untouched
    assert await _runs(client, other) == []  # and another tenant sees none of these runs

    after = await _search(client, gateway, rid, embedded=True)
    assert any(h["explanation"]["vector_similarity"] is not None for h in after["items"])
    assert any(
        h["explanation"]["vector_similarity"] is not None
        for h in await _query(client, moving, base_id)
    )
    # New memories of the moved tenant are embedded by model-b from now on.
    await _memories(client, gateway, rid, ("I collect old maps",))
    assert await _models(resources, moving.id) == ({("model-b", 12)}, {"model-b"})


async def _chunks(resources: Resources, tenant_id: str) -> list[Any]:
    async with owner_sessions(resources)() as session:
        rows = await session.execute(
            select(KnowledgeChunk.id).where(KnowledgeChunk.tenant_id == tenant_id)
        )
        return list(rows.scalars())


async def test_a_change_without_a_message_is_found_and_run_by_the_sweep(
    client, make_tenant, resources, settings
) -> None:
    """As from ``tether tenant settings --set`` (no task sent): the run waits pending,
    the beat's sweep finds it, and a worker claims it once; a later change supersedes
    an unfinished run."""
    tenant = await make_tenant()
    tenant_id = TenantId(uuid.UUID(tenant.id))
    gateway = await tenant.key("gateway")
    rid = await resolved_relationship(client, gateway, "cli-user")
    await _memories(client, gateway, rid, FACTS)

    async def change(provider: str) -> None:
        await _choose(resources, settings, tenant_id, provider)

    await change("alpha")
    await change("beta")  # before the first run started
    assert [r["status"] for r in await _runs(client, tenant)] == ["pending", "superseded"]
    found = await resumable_runs(resources.sessions, timedelta(0), STALE_AFTER)
    mine = [run_id for t, run_id in found if t == tenant_id]
    assert [str(r) for r in mine] == [(await _runs(client, tenant))[0]["id"]]

    cache = TenantSettingsCache(resources.sessions, 30.0)
    embedders = TenantEmbedders(OfflineEmbeddingProvider(), settings.providers, cache)
    invalidated: list[object] = []

    async def invalidate(scope: object) -> None:
        invalidated.append(scope)

    job = ReembedJob(resources.sessions, cache, embedders, invalidate, settle_seconds=0.0)
    try:
        assert await job.run(tenant_id, mine[0]) == "done"
        assert await job.run(tenant_id, mine[0]) == "skipped"  # done: never run twice
    finally:
        await embedders.aclose()
    assert invalidated  # recall drops its copies of the partition
    assert (await _models(resources, tenant.id))[0] == {("model-b", 12)}
    latest = (await _runs(client, tenant))[0]
    assert (latest["status"], latest["memories_done"], latest["model"]) == (
        "done",
        len(FACTS),
        "model-b",
    )


async def test_a_run_superseded_while_it_embeds_writes_nothing(
    client, make_tenant, resources, settings
) -> None:
    """The tenant changes its choice again while a batch of the first run is being
    embedded: that batch is rolled back, so no vector of the abandoned model is left for
    the new run to miss."""
    tenant = await make_tenant()
    tenant_id = TenantId(uuid.UUID(tenant.id))
    gateway = await tenant.key("gateway")
    rid = await resolved_relationship(client, gateway, "changes-twice")
    await _memories(client, gateway, rid, FACTS)
    before = (await _models(resources, tenant.id))[0]

    async def change(provider: str) -> None:
        await _choose(resources, settings, tenant_id, provider)

    await change("alpha")
    first = (await _runs(client, tenant))[0]["id"]
    cache = TenantSettingsCache(resources.sessions, 30.0)
    embedders = TenantEmbedders(OfflineEmbeddingProvider(), settings.providers, cache)

    class ChangesMindMidBatch:
        def __init__(self, inner: Any) -> None:
            self._inner = inner
            self.name, self.dimension = inner.name, inner.dimension

        async def embed(self, texts: list[str]) -> Any:
            vectors = await self._inner.embed(texts)
            await change("beta")
            return vectors

    class Embedders:
        async def for_tenant(self, tenant: TenantId) -> Any:
            return ChangesMindMidBatch(await embedders.for_tenant(tenant))

    invalidated: list[object] = []

    async def invalidate(scope: object) -> None:
        invalidated.append(scope)

    job = ReembedJob(resources.sessions, cache, Embedders(), invalidate, settle_seconds=0.0)  # type: ignore[arg-type]
    try:
        assert await job.run(tenant_id, uuid.UUID(first)) == "superseded"
    finally:
        await embedders.aclose()
    assert (await _models(resources, tenant.id))[0] == before  # no model-a vector
    assert [r["status"] for r in await _runs(client, tenant)][:2] == ["pending", "superseded"]
