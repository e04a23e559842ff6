"""`tether reindex`: vectors rebuilt from Postgres text for a new embedding model,
resumable after a failure, and recall uses them afterwards."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from tests.providers_server import FakeOpenAIServer, Reply
from tests.support import owner_sessions, resolve_body
from tether.memories.reindex import count_stale, reindex
from tether.providers.base import ProviderError
from tether.providers.openai_embeddings import OpenAICompatibleEndpoint, OpenAIEmbeddingProvider
from tether.recall.models import Memory

pytestmark = pytest.mark.integration


async def _models(resources) -> dict[str | None, int]:
    async with owner_sessions(resources)() as session:
        rows = await session.execute(
            select(Memory.embedding_model, func.count()).group_by(Memory.embedding_model)
        )
        return dict(rows.tuples().all())


async def test_reindex_moves_every_memory_to_the_new_model_and_resumes(
    client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    rid = (await client.post("/v1/resolve", json=resolve_body("reindex"), headers=headers)).json()[
        "relationship_id"
    ]
    memories = [{"content": f"memory number {i} about 猫 and cats"} for i in range(25)]
    await client.post(
        f"/v1/relationships/{rid}/memories/batch", json={"memories": memories}, headers=headers
    )
    assert await _models(resources) == {"use-multilingual-v3": 25}

    server = FakeOpenAIServer(dimension=16).start()
    endpoint = OpenAICompatibleEndpoint(server.base_url, timeout_seconds=2, max_retries=0)
    new_model = OpenAIEmbeddingProvider(endpoint, model="new-model", dimension=16, batch_size=64)
    invalidated: list[object] = []

    async def invalidate(scope: object) -> None:
        invalidated.append(scope)

    try:
        assert await count_stale(resources.sessions, new_model, everything=False) == 25
        server.enqueue(Reply(), Reply(status=500))  # the second batch fails
        with pytest.raises(ProviderError):
            await reindex(resources.sessions, new_model, invalidate, batch=10)
        assert (await _models(resources))["new-model"] == 10  # the first batch was kept
        progress = await reindex(resources.sessions, new_model, invalidate, batch=10)
        assert progress.total == 15
        assert progress.done == 15
        assert await _models(resources) == {"new-model": 25}
        assert await count_stale(resources.sessions, new_model, everything=False) == 0
        assert invalidated  # recall drops its copies of the partition
    finally:
        await new_model.aclose()
        server.stop()
    async with owner_sessions(resources)() as session:
        dims = set((await session.execute(select(Memory.embedding_dim))).scalars())
    assert dims == {16}


def test_reindex_is_a_cli_command() -> None:
    from tether.cli import build_parser

    args = build_parser().parse_args(["reindex", "--batch", "64", "--all"])
    assert args.batch == 64
    assert args.all is True


async def test_reindex_keeps_each_tenant_on_its_own_model(client, make_tenant, resources) -> None:
    """A tenant on a named embedding provider (decision 0077) is re-embedded by its own
    model, not moved to the deployment's."""
    own, default = await make_tenant(), await make_tenant()
    for tenant in (own, default):
        headers = await tenant.key("gateway")
        resolved = await client.post("/v1/resolve", json=resolve_body("own"), headers=headers)
        rid = resolved.json()["relationship_id"]
        stored = await client.post(
            f"/v1/relationships/{rid}/memories", json={"content": "cats"}, headers=headers
        )
        assert stored.status_code == 201, stored.text

    server = FakeOpenAIServer(dimension=16).start()

    def provider(model: str) -> OpenAIEmbeddingProvider:
        endpoint = OpenAICompatibleEndpoint(server.base_url, timeout_seconds=2, max_retries=0)
        return OpenAIEmbeddingProvider(endpoint, model=model, dimension=16, batch_size=64)

    deployment, chosen = provider("deployment-model"), provider("tenant-model")

    async def embedders(tenant_id: object) -> OpenAIEmbeddingProvider:
        return chosen if str(tenant_id) == own.id else deployment

    async def invalidate(scope: object) -> None:
        return None

    try:
        await reindex(resources.sessions, deployment, invalidate, embedders=embedders)
    finally:
        await deployment.aclose()
        await chosen.aclose()
        server.stop()
    async with owner_sessions(resources)() as session:
        rows = await session.execute(select(Memory.tenant_id, Memory.embedding_model))
        models = {str(t): m for t, m in rows.tuples()}
    assert models[own.id] == "tenant-model"
    assert models[default.id] == "deployment-model"
