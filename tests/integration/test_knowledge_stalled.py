"""Documents whose indexing stalled are queued again by the sweep, or failed after a few
tries (tether.knowledge.stalled), with a real worker running the periodic task."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from tests.integration.test_knowledge_indexing import GUIDE, new_base, settled, upload
from tests.support import app_client, owner_sessions
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.core.tasks import TaskQueue
from tether.core.tenant_sessions import tenant_transaction
from tether.knowledge.models import KnowledgeDocument
from tether.knowledge.repositories import DocumentRepository
from tether.knowledge.stalled import STALLED_TASK, sweep_stalled
from tether.providers.offline import load_model

pytestmark = [pytest.mark.integration, pytest.mark.worker]

BASES = "/v1/knowledge-bases"
STALLED_FOR = timedelta(hours=1)  # past the default stalled_after_seconds (30 min)


@pytest.fixture(scope="module")
async def admin(make_tenant, celery_worker):  # type: ignore[no-untyped-def]
    # The worker (conftest) reads uploads from the module's data dir, as the API does.
    await asyncio.to_thread(load_model)
    return await make_tenant()


def _guide(n: int) -> bytes:
    return f"{GUIDE}\n\nCopy {n}: 第{n}份。\n".encode()


async def _accepted_while_the_broker_was_away(
    settings: Settings, headers: dict[str, str], base: str, copies: range, tmp_path: Path
) -> list[str]:
    """Uploads accepted by an API whose broker is unreachable: their indexing is not
    queued, so they wait "uploaded"."""
    away = settings.model_copy(update={"broker_url": f"unix://{tmp_path}/no-broker.sock"})
    ids = []
    async with app_client(away) as api:
        for n in copies:
            document = await upload(api, base, headers, f"guide-{n}.md", _guide(n))
            assert document["status"] == "uploaded"
            ids.append(str(document["id"]))
    return ids


async def _one_accepted_while_the_broker_was_away(
    client: Any, headers: dict[str, str], settings: Settings, name: str, n: int, tmp_path: Path
) -> tuple[str, str]:
    """A new base named ``name`` and a document in it accepted with its task not queued."""
    base = await new_base(client, headers, name)
    (document,) = await _accepted_while_the_broker_was_away(
        settings, headers, base, range(n, n + 1), tmp_path
    )
    return base, document


async def _set(resources: Resources, document_id: str, **values: object) -> None:
    async with owner_sessions(resources)() as session, session.begin():
        await session.execute(
            update(KnowledgeDocument)
            .where(KnowledgeDocument.id == uuid.UUID(document_id))
            .values(**values)
        )


async def _row(resources: Resources, document_id: str) -> KnowledgeDocument:
    async with owner_sessions(resources)() as session:
        statement = select(KnowledgeDocument).where(KnowledgeDocument.id == uuid.UUID(document_id))
        return (await session.execute(statement)).scalar_one()


async def test_stalled_documents_are_queued_again_then_failed_and_others_left_alone(
    client, admin, resources: Resources, settings: Settings, tmp_path: Path
) -> None:
    headers = admin.admin
    base = await new_base(client, headers, "stalled")
    lost, given_up, fresh, deleted = await _accepted_while_the_broker_was_away(
        settings, headers, base, range(4), tmp_path
    )
    # As if each had been queued and its task lost (not what a failed send leaves).
    for document in (lost, given_up, fresh):
        await _set(resources, document, unqueued=False)
    long_ago = datetime.now(UTC) - STALLED_FOR
    await _set(resources, lost, updated_at=long_ago)
    tries = settings.knowledge.stalled_requeues
    await _set(resources, given_up, updated_at=long_ago, requeues=tries)
    removed = await client.delete(f"{BASES}/{base}/documents/{deleted}", headers=headers)
    assert removed.status_code == 204, removed.text
    await _set(resources, deleted, updated_at=long_ago)

    await resources.tasks.send(STALLED_TASK, [])  # as beat does, every 5 min

    indexed = await settled(client, base, lost, headers)
    assert indexed["status"] == "ready", indexed
    assert indexed["chunk_count"] > 0
    assert (await _row(resources, lost)).requeues == 1
    failed = await settled(client, base, given_up, headers)
    assert failed["status"] == "failed"
    assert failed["error"] == (
        f"indexing did not finish after {tries + 1} tries; reindex the document to retry"
    )
    assert (await _row(resources, fresh)).status == "uploaded"  # not stalled yet
    assert (await _row(resources, fresh)).requeues == 0
    assert (await _row(resources, deleted)).requeues == 0

    # A reindex starts the count again.
    reindexed = await client.post(f"{BASES}/{base}/documents/{given_up}/reindex", headers=headers)
    assert reindexed.status_code == 202, reindexed.text
    assert (await _row(resources, given_up)).requeues == 0
    assert (await settled(client, base, given_up, headers))["status"] == "ready"


async def test_a_sweep_that_cannot_reach_the_broker_loses_nothing(
    client, admin, resources: Resources, settings: Settings, tmp_path: Path
) -> None:
    _, document = await _one_accepted_while_the_broker_was_away(
        client, admin.admin, settings, "stalled-no-broker", 9, tmp_path
    )
    long_ago = datetime.now(UTC) - STALLED_FOR
    await _set(resources, document, updated_at=long_ago)
    failures: list[str] = []

    async def fail(tenant_id: TenantId, document_id: uuid.UUID, generation: int, why: str) -> None:
        failures.append(why)

    away = TaskQueue(settings.model_copy(update={"broker_url": f"unix://{tmp_path}/none.sock"}))
    try:
        report = await sweep_stalled(
            resources.sessions, away, settings.knowledge, datetime.now(UTC), fail
        )
    finally:
        away.close()
    assert report.unsent >= 1
    assert report.requeued == 0
    assert failures == []
    row = await _row(resources, document)
    assert (row.status, row.requeues, row.unqueued) == ("uploaded", 0, True)  # tried again
    assert row.updated_at < datetime.now(UTC) - STALLED_FOR + timedelta(minutes=1)


async def _never(tenant_id: TenantId, document_id: uuid.UUID, generation: int, why: str) -> None:
    raise AssertionError(f"document {document_id} failed: {why}")


async def test_a_document_whose_task_never_reached_the_queue_is_queued_by_the_next_sweep(
    client, admin, resources: Resources, settings: Settings, tmp_path: Path
) -> None:
    headers = admin.admin
    base, document = await _one_accepted_while_the_broker_was_away(
        client, headers, settings, "unqueued", 20, tmp_path
    )
    row = await _row(resources, document)
    assert (row.status, row.unqueued, row.requeues) == ("uploaded", True, 0)
    uploaded_at = row.updated_at
    # Just uploaded, so not stalled by time; and no retries allowed: a first delivery
    # is not a retry.
    limits = settings.knowledge.model_copy(update={"stalled_requeues": 0})
    report = await sweep_stalled(
        resources.sessions, resources.tasks, limits, datetime.now(UTC), _never
    )
    assert report.queued >= 1
    row = await _row(resources, document)
    assert (row.unqueued, row.requeues) == (False, 0)
    assert row.updated_at > uploaded_at  # its stall clock starts now
    indexed = await settled(client, base, document, headers)
    assert indexed["status"] == "ready", indexed
    assert indexed["chunk_count"] > 0


async def test_a_failed_send_of_an_older_generation_marks_nothing(
    client, admin, resources: Resources, settings: Settings, tmp_path: Path
) -> None:
    _, document = await _one_accepted_while_the_broker_was_away(
        client, admin.admin, settings, "unqueued-reindexed", 30, tmp_path
    )
    # Reindexed meanwhile (queued, generation 2): the mark of generation 1's failed send
    # arrives late and must not send generation 2 a second time.
    await _set(resources, document, unqueued=False, generation=2)
    row = await _row(resources, document)
    async with tenant_transaction(resources.sessions, TenantId(row.tenant_id)) as session:
        repository = DocumentRepository(session, TenantId(row.tenant_id))
        await repository.mark_unqueued(uuid.UUID(document), 1)
    assert (await _row(resources, document)).unqueued is False
    async with tenant_transaction(resources.sessions, TenantId(row.tenant_id)) as session:
        repository = DocumentRepository(session, TenantId(row.tenant_id))
        await repository.mark_unqueued(uuid.UUID(document), 2)
    assert (await _row(resources, document)).unqueued is True
