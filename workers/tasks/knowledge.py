"""Indexing knowledge-base documents."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime

from celery import Task

from tether.core.database_errors import DatabaseUnavailable
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.knowledge.builtin import BuiltinRagEngine
from tether.knowledge.documents import INDEX_TASK
from tether.knowledge.file_deletions import SWEEP_TASK as FILE_DELETIONS_TASK
from tether.knowledge.file_deletions import sweep_file_deletions
from tether.knowledge.indexing import DocumentIndexer
from tether.knowledge.objects import ObjectStore
from tether.knowledge.stalled import STALLED_TASK, sweep_stalled
from tether.recall.weights import rank_weights
from workers.app import OUTAGE_RETRIES, app, settings_of
from workers.runtime import run
from workers.services import services_for

log = logging.getLogger(__name__)

UNEXPECTED = "indexing stopped on an unexpected error; reindex the document to retry"
# A 100-page PDF takes seconds and a 20 MB text file a few minutes: past this, a run is
# stuck; the soft limit raises inside it (prefork pools) and the document is failed.
SOFT_LIMIT_SECONDS = 900


def _engine(resources: Resources) -> BuiltinRagEngine:
    settings = resources.settings
    return BuiltinRagEngine(
        resources.sessions,
        services_for(resources).embedders,
        rank_weights(settings),
        settings,
    )


async def _index(resources: Resources, tenant_id: TenantId, document_id: uuid.UUID) -> str:
    report = await _engine(resources).ingest(tenant_id, document_id)
    return report.status


def _indexer(resources: Resources, tenant_id: TenantId) -> DocumentIndexer:
    settings = resources.settings
    return DocumentIndexer(
        resources.sessions,
        tenant_id,
        services_for(resources).embedder,
        settings.knowledge,
        settings.files,
    )


async def _give_up(resources: Resources, tenant_id: TenantId, document_id: uuid.UUID) -> str:
    return (await _indexer(resources, tenant_id).fail(document_id, UNEXPECTED)).status


async def _requeue_stalled(resources: Resources) -> dict[str, int]:
    async def fail(tenant_id: TenantId, document_id: uuid.UUID, generation: int, why: str) -> None:
        await _indexer(resources, tenant_id).fail(document_id, why, generation)

    report = await sweep_stalled(
        resources.sessions, resources.tasks, resources.settings.knowledge, datetime.now(UTC), fail
    )
    return {
        "requeued": report.requeued,
        "failed": report.failed,
        "unsent": report.unsent,
        "queued": report.queued,
    }


@app.task(
    name=INDEX_TASK,
    bind=True,
    soft_time_limit=SOFT_LIMIT_SECONDS,
    time_limit=SOFT_LIMIT_SECONDS + 60,
    **OUTAGE_RETRIES,
)
def index_document(self: Task[..., str], tenant_id: str, document_id: str) -> str:
    """Parse, chunk, tokenize and embed one uploaded document (idempotent)."""
    tenant, document = TenantId(uuid.UUID(tenant_id)), uuid.UUID(document_id)
    settings = settings_of(app)
    try:
        return run(settings, lambda r: _index(r, tenant, document))
    except Exception as exc:  # process edge: a document must not stay "indexing" forever
        retries = int(self.request.retries or 0)
        if isinstance(exc, DatabaseUnavailable) and retries < settings.worker.outage_retry_attempts:
            raise  # retried (OUTAGE_RETRIES): an outage must not fail the document
        log.exception("indexing document %s failed (retried %d times)", document_id, retries)
        return run(settings, lambda r: _give_up(r, tenant, document))


@app.task(name=STALLED_TASK)
def requeue_stalled() -> dict[str, int]:
    """Periodic (beat): documents whose indexing stalled are queued again, or failed after
    ``knowledge.stalled_requeues`` tries (tether.knowledge.stalled)."""
    return run(settings_of(app), _requeue_stalled)


async def _sweep_file_deletions(resources: Resources) -> dict[str, int]:
    files = resources.settings.files
    if files.bucket is None:  # no object store: Postgres deletes in the transaction
        return {"deleted": 0, "pending": 0}
    done, left = await sweep_file_deletions(resources.sessions, ObjectStore(files))
    return {"deleted": done, "pending": left}


@app.task(name=FILE_DELETIONS_TASK)
def sweep_deleted_files() -> dict[str, int]:
    """Periodic (beat): objects of deleted documents and bases that the after-commit
    hook could not delete are deleted now (tether.knowledge.file_deletions)."""
    return run(settings_of(app), _sweep_file_deletions)
