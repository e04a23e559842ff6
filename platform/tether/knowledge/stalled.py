"""The stalled-document sweep: uploads whose indexing never ends on its own.

A document waits "uploaded" when its indexing task could not be queued (the broker was
away at upload: the upload is still accepted) and "uploaded" or "indexing" when the task
was lost or its run died without marking it (a worker killed past its time limit, a
broker that lost its messages, an outage that outlasted the task's retries). Nothing
else would index it before someone asked for a reindex. Periodically (beat), a document
that has not changed for ``stalled_after_seconds`` is queued again, at most
``stalled_requeues`` times since its upload or last reindex, and then marked failed
with a reason, so it is never left waiting for good. Queuing again is safe: indexing
claims the document's generation and commits only if it is still current.

A document whose task the API failed to send is marked ``unqueued`` (migration 0013):
the next sweep queues it without waiting, and that first delivery counts as no retry.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, text, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tether.core.database import transaction
from tether.core.ids import TenantId
from tether.core.settings import KnowledgeSettings
from tether.core.tasks import QueueUnavailable, TaskQueue
from tether.core.tenant_sessions import tenant_transaction
from tether.knowledge.documents import INDEX_TASK
from tether.knowledge.models import KnowledgeDocument
from tether.knowledge.schemas import DocumentStatus

log = logging.getLogger(__name__)

# The periodic task that runs the sweep (workers.tasks.knowledge, scheduled by beat).
STALLED_TASK = "knowledge.requeue_stalled"
BATCH = 200
WAITING = (DocumentStatus.UPLOADED.value, DocumentStatus.INDEXING.value)
GAVE_UP = "indexing did not finish after {n} tries; reindex the document to retry"


@dataclass(frozen=True, slots=True)
class StalledDocument:
    tenant_id: TenantId
    document_id: uuid.UUID
    generation: int
    requeues: int
    unqueued: bool


@dataclass(frozen=True, slots=True)
class SweepReport:
    requeued: int = 0
    failed: int = 0
    unsent: int = 0
    # Documents whose task the API could not send, queued for the first time.
    queued: int = 0


# Mark a document failed with a reason, if ``generation`` is still its current one.
Fail = Callable[[TenantId, uuid.UUID, int, str], Awaitable[None]]


_STALLED = text(
    "SELECT tenant_id, document_id, generation, requeues, unqueued "
    "FROM tether_stalled_documents(:before, :statuses, :n)"
)


async def _stalled(session: AsyncSession, before: datetime) -> list[StalledDocument]:
    """Across tenants by nature, through a system function of migration 0017 (ids and
    counters of documents waiting, unchanged since ``before`` or never queued; the
    condition ``_waiting`` states again when a try is counted)."""
    bound = {"before": before, "statuses": list(WAITING), "n": BATCH}
    rows = await session.execute(_STALLED, bound)
    return [StalledDocument(TenantId(t), d, g, r, u) for t, d, g, r, u in rows]


def _waiting(before: datetime) -> tuple[ColumnElement[bool], ...]:
    """Waiting for indexing, and unchanged since ``before`` or never queued."""
    return (
        KnowledgeDocument.status.in_(WAITING),
        KnowledgeDocument.deleted_at.is_(None),
        (KnowledgeDocument.updated_at < before) | KnowledgeDocument.unqueued,
    )


async def _count_requeue(
    session: AsyncSession, document: StalledDocument, before: datetime, now: datetime
) -> bool:
    """Count the try (a first delivery is none) and restart the document's stall
    clock, unless it moved meanwhile."""
    tries = KnowledgeDocument.requeues + (0 if document.unqueued else 1)
    statement = (
        update(KnowledgeDocument)
        .where(
            KnowledgeDocument.tenant_id == document.tenant_id,
            KnowledgeDocument.id == document.document_id,
            KnowledgeDocument.generation == document.generation,
            *_waiting(before),
        )
        .values(requeues=tries, unqueued=False, updated_at=now)
        .returning(KnowledgeDocument.id)
    )
    return (await session.execute(statement)).scalar_one_or_none() is not None


async def sweep_stalled(
    sessions: async_sessionmaker[AsyncSession],
    tasks: TaskQueue,
    limits: KnowledgeSettings,
    now: datetime,
    fail: Fail,
) -> SweepReport:
    """Queue again, or fail, every document stalled at ``now`` (one batch per call: the
    next sweep takes the rest, so one run stays short)."""
    before = now - timedelta(seconds=limits.stalled_after_seconds)
    async with transaction(sessions) as session:
        stalled = await _stalled(session, before)
    requeued = failed = unsent = queued = 0
    for document in stalled:
        if not document.unqueued and document.requeues >= limits.stalled_requeues:
            reason = GAVE_UP.format(n=document.requeues + 1)
            await fail(document.tenant_id, document.document_id, document.generation, reason)
            failed += 1
            continue
        try:
            await tasks.send(INDEX_TASK, [str(document.tenant_id), str(document.document_id)])
        except QueueUnavailable as exc:  # the next sweep tries again
            log.warning("stalled document %s not queued again: %s", document.document_id, exc)
            unsent += 1
            continue
        # Counted after the send: a try that never reached the queue is not one.
        async with tenant_transaction(sessions, document.tenant_id) as session:
            if await _count_requeue(session, document, before, now):
                queued += document.unqueued
                requeued += not document.unqueued
    if stalled:
        log.info(
            "stalled documents: %d queued again, %d failed, %d queued for the first time",
            requeued,
            failed,
            queued,
        )
    return SweepReport(requeued, failed, unsent, queued)
