"""Object deletions that happen only after the deleting transaction commits (0083).

The transaction that deletes a document or a base writes a ``file_deletions`` row (the
object's key, or the base's prefix) and registers a hook. After the commit, the hook
deletes the objects and then the row; if the store is down, or the process dies first,
the row stays and the periodic sweep retries it. A rollback takes the row with it and
no hook runs, so a delete that did not happen never loses a file.

An upload is the mirror case: its object is written before its transaction commits. A
guard row for the key is committed first, due only after ``UPLOAD_GRACE``, and the
upload's transaction deletes it: committed, the guard is gone with it; rolled back (or
the pod died), the sweep deletes the orphan object once the grace has passed. The sweep
never deletes an object a live document still names.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, exists, insert, select, text, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tether.core.database import transaction
from tether.core.ids import TenantId, new_id
from tether.core.tenant_sessions import tenant_transaction
from tether.core.unit_of_work import on_commit
from tether.knowledge.errors import FileStoreUnavailable
from tether.knowledge.models import FileDeletion, KnowledgeDocument
from tether.knowledge.objects import ObjectStore

log = logging.getLogger(__name__)

# The periodic task that retries what the hooks left (workers.tasks.knowledge, beat).
SWEEP_TASK = "knowledge.sweep_file_deletions"
BATCH = 200
# Far longer than any upload request: the guard must not fire while its upload commits.
UPLOAD_GRACE = timedelta(hours=1)
S3_SCHEME = "s3:"
_PENDING = text("SELECT id, tenant_id, key, attempts FROM tether_pending_file_deletions(:n)")


@dataclass(frozen=True, slots=True)
class PendingDeletion:
    id: uuid.UUID
    tenant_id: TenantId
    key: str


async def delete_after_commit(
    session: AsyncSession,
    sessions: async_sessionmaker[AsyncSession],
    tenant_id: TenantId,
    store: ObjectStore,
    key: str,
) -> None:
    """Record ``key`` (a key, or a prefix ending in ``/``) in this transaction and
    delete its objects once it commits."""
    pending = PendingDeletion(new_id(), tenant_id, key)
    await session.execute(insert(FileDeletion).values(id=pending.id, tenant_id=tenant_id, key=key))

    async def run() -> None:
        await attempt(sessions, store, pending)

    on_commit(session, run)


async def guard_upload(
    session: AsyncSession,
    sessions: async_sessionmaker[AsyncSession],
    tenant_id: TenantId,
    key: str,
) -> None:
    """Before ``key`` is written by the upload in ``session``: see the module docstring."""
    guard = new_id()
    due = datetime.now(UTC) + UPLOAD_GRACE
    async with tenant_transaction(sessions, tenant_id) as own:
        await own.execute(
            insert(FileDeletion).values(id=guard, tenant_id=tenant_id, key=key, not_before=due)
        )
    await session.execute(delete(FileDeletion).where(FileDeletion.id == guard))


async def _still_named(
    sessions: async_sessionmaker[AsyncSession], pending: PendingDeletion
) -> bool:
    """Whether a live document still names this key (a guard whose upload committed
    but whose row survived somehow): then the object stays."""
    if pending.key.endswith("/"):
        return False
    named = exists().where(
        KnowledgeDocument.tenant_id == pending.tenant_id,
        KnowledgeDocument.storage_key == S3_SCHEME + pending.key,
        KnowledgeDocument.deleted_at.is_(None),
    )
    async with tenant_transaction(sessions, pending.tenant_id) as session:
        return bool((await session.execute(select(named))).scalar())


async def attempt(
    sessions: async_sessionmaker[AsyncSession], store: ObjectStore, pending: PendingDeletion
) -> bool:
    """Delete the objects, then the row; on failure count the attempt (the sweep
    retries). Never raises: it runs after a commit that has already answered."""
    try:
        if not await _still_named(sessions, pending):
            await store.delete(pending.key)
    except FileStoreUnavailable as exc:
        log.warning("objects under %s not deleted yet: %s", pending.key, exc)
        await _record_failure(sessions, pending, str(exc))
        return False
    try:
        async with tenant_transaction(sessions, pending.tenant_id) as session:
            await session.execute(delete(FileDeletion).where(FileDeletion.id == pending.id))
    except (SQLAlchemyError, OSError) as exc:
        # The objects are gone (or kept on purpose); the sweep comes back for the row.
        log.warning("file deletion %s not marked done: %s", pending.id, exc)
    return True


async def _record_failure(
    sessions: async_sessionmaker[AsyncSession], pending: PendingDeletion, error: str
) -> None:
    try:
        async with tenant_transaction(sessions, pending.tenant_id) as session:
            await session.execute(
                update(FileDeletion)
                .where(FileDeletion.id == pending.id)
                .values(attempts=FileDeletion.attempts + 1, last_error=error[:500])
            )
    except (SQLAlchemyError, OSError) as exc:
        log.warning("file deletion %s failure not recorded: %s", pending.id, exc)


async def sweep_file_deletions(
    sessions: async_sessionmaker[AsyncSession], store: ObjectStore
) -> tuple[int, int]:
    """Retry every pending deletion (one batch per call); (deleted, still pending)."""
    async with transaction(sessions) as session:
        rows = (await session.execute(_PENDING, {"n": BATCH})).all()
    done = 0
    for row_id, tenant, key, _attempts in rows:
        done += await attempt(sessions, store, PendingDeletion(row_id, TenantId(tenant), key))
    if rows:
        log.info("file deletions: %d done, %d still pending", done, len(rows) - done)
    return done, len(rows) - done
