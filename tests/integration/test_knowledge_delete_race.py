"""Deleting a base while the indexer commits one of its documents: both finish (the
indexer's lock order is document, then base; the delete takes the same order). Before,
the two deadlocked and the delete answered 500."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tests.integration.test_knowledge_api import base, upload
from tether.core.ids import TenantId
from tether.core.tenant_sessions import tenant_transaction
from tether.knowledge.repositories import DocumentRepository, KnowledgeBaseRepository

pytestmark = pytest.mark.integration


async def test_a_base_deleted_while_a_document_commits_is_deleted(
    client, make_tenant, resources
) -> None:
    tenant = await make_tenant()
    base_id = (await base(client, tenant.admin))["id"]
    response = await upload(client, base_id, tenant.admin, "a.md", b"# Fan\n\nOil it.\n")
    assert response.status_code == 202, response.text
    document_id = uuid.UUID(response.json()["id"])
    tenant_id = TenantId(uuid.UUID(tenant.id))

    async with tenant_transaction(resources.sessions, tenant_id) as session:
        # What the indexer's commit does: the document first ...
        assert await DocumentRepository(session, tenant_id).lock(document_id) is not None
        deleting = asyncio.create_task(
            client.delete(f"/v1/knowledge-bases/{base_id}", headers=tenant.admin)
        )
        await asyncio.sleep(0.5)
        assert not deleting.done()  # waits for the document
        # ... then its base; a deadlock would be detected after deadlock_timeout (1 s).
        await KnowledgeBaseRepository(session, tenant_id).bump(uuid.UUID(base_id))
        await asyncio.sleep(1.5)

    deleted = await deleting
    assert deleted.status_code == 204, deleted.text
    gone = await client.get(f"/v1/knowledge-bases/{base_id}", headers=tenant.admin)
    assert gone.status_code == 404
