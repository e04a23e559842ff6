"""Ending sessions (explicitly or when idle) and handing them to memory extraction."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from celery import Task

from tenancy.ids import RelationshipScope
from tether.core.database import transaction
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.core.tasks import QueueUnavailable
from tether.core.tenant_sessions import tenant_transaction
from tether.turns.maintenance import (
    SessionRef,
    by_tenant,
    close_idle_sessions,
    idle_sessions,
    sessions_awaiting_extraction,
)
from tether.turns.repositories import ChatSessionRepository, TurnRepository
from tether.turns.sessions import END_TASK, EXTRACT_TASK
from workers.app import OUTAGE_RETRIES, SWEEP_TASK, app, settings_of
from workers.runtime import run
from workers.tasks.turns import scope_of

log = logging.getLogger(__name__)

SWEEP_BATCH = 500
# An ended session not extracted after this long lost its task: schedule it again.
EXTRACTION_GRACE = timedelta(minutes=2)


async def _durable_count(resources: Resources, scope: RelationshipScope, session_id: str) -> int:
    async with tenant_transaction(resources.sessions, scope.tenant_id) as session:
        return await TurnRepository(session, scope).count_in_session(session_id)


async def _end(
    resources: Resources, scope: RelationshipScope, session_id: str, reason: str
) -> None:
    async with tenant_transaction(resources.sessions, scope.tenant_id) as session:
        await ChatSessionRepository(session, scope).end(session_id, reason, datetime.now(UTC))
    await _schedule(resources, [SessionRef(scope.tenant_id, scope.relationship_id, session_id)])


async def _schedule(resources: Resources, sessions: list[SessionRef]) -> None:
    for ref in sessions:
        args = [str(ref.tenant_id), str(ref.relationship_id), ref.session_id]
        try:
            await resources.tasks.send(EXTRACT_TASK, args)
        except QueueUnavailable as exc:  # the next sweep finds it again
            log.warning("extraction of a session not queued: %s", exc)


@app.task(name=END_TASK, bind=True, **OUTAGE_RETRIES)
def end(
    self: Task[..., str],
    tenant_id: str,
    relationship_id: str,
    session_id: str,
    expected_turns: int | None,
    reason: str,
    waited: int = 0,
) -> str:
    """Close the session once every turn the API accepted for it is durable (waiting up
    to ``ingest.end_wait_seconds``), then queue its extraction. ``waited``: seconds
    waited so far; counted apart from retries during a database outage, which must not
    use the wait up and close the session before its last turns are stored."""
    settings = settings_of(app)
    scope = scope_of(tenant_id, relationship_id)
    if expected_turns:
        durable = run(settings, lambda r: _durable_count(r, scope, session_id))
        if durable < expected_turns and waited < settings.ingest.end_wait_seconds:
            arguments = (tenant_id, relationship_id, session_id, expected_turns, reason)
            # Not bounded by the outage retries' limit: the wait has its own.
            waiting = {"waited": waited + 1}
            raise self.retry(args=arguments, kwargs=waiting, countdown=1, max_retries=None)
    run(settings, lambda r: _end(r, scope, session_id, reason))
    return "ended"


async def _sweep(resources: Resources) -> tuple[int, int]:
    settings = resources.settings
    now = datetime.now(UTC)
    idle_before = now - timedelta(minutes=settings.ingest.session_idle_minutes)
    # Found across tenants by the system functions; each tenant's closed in its own
    # transaction, under row-level security.
    async with transaction(resources.sessions) as session:
        idle = await idle_sessions(session, idle_before, SWEEP_BATCH)
    closed: list[SessionRef] = []
    for tenant_id, refs in by_tenant(idle).items():
        async with tenant_transaction(resources.sessions, TenantId(tenant_id)) as session:
            closed += await close_idle_sessions(session, refs, idle_before, now)
    async with transaction(resources.sessions) as session:
        stale = await sessions_awaiting_extraction(session, now - EXTRACTION_GRACE, SWEEP_BATCH)
    await _schedule(resources, closed + stale)
    return len(closed), len(stale)


@app.task(name=SWEEP_TASK)
def sweep() -> dict[str, int]:
    """Periodic (beat): end idle sessions, re-queue extractions that were lost."""
    closed, stale = run(settings_of(app), _sweep)
    return {"closed": closed, "requeued": stale}
