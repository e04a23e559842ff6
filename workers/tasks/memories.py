"""Memory extraction per ended session, reinforcement of recalled memories, expiry."""

from __future__ import annotations

import logging
import time
import uuid
from datetime import UTC, datetime

from redis.exceptions import RedisError

from tenancy.ids import RelationshipScope
from tether.core.database_errors import DATABASE_ERRORS
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.core.tenant_sessions import tenant_transaction
from tether.memories.expiry import expire_due
from tether.memories.repositories import MemoryRepository
from tether.memories.session_extraction import SessionExtraction
from tether.recall.invalidations import RETRY_INVALIDATIONS_TASK, retry_recorded
from tether.recall.reinforcement import REINFORCE_BATCH_TASK, REINFORCE_TASK, Entry
from tether.recall.versions import VERSION_TTL_SECONDS
from tether.turns.sessions import EXTRACT_TASK
from tether.turns.working_memory import WorkingMemory
from workers.app import EXPIRY_TASK, OUTAGE_RETRIES, app, settings_of
from workers.runtime import run
from workers.services import services_for
from workers.tasks.turns import scope_of

log = logging.getLogger(__name__)


async def _extract(
    resources: Resources, scope: RelationshipScope, session_id: str
) -> dict[str, object]:
    services = services_for(resources)
    tenant_id = TenantId(scope.tenant_id)
    extraction = (await services.tenant_settings.get(tenant_id)).extraction
    chat = await services.chats.for_tenant(tenant_id, extraction)
    embedder = await services.embedders.for_tenant(tenant_id)
    async with tenant_transaction(resources.sessions, scope.tenant_id) as session:
        report = await SessionExtraction(
            session,
            scope,
            embedder,
            services.versions.invalidate,
            resources.settings,
            chat,
            services.llm_gate,
        ).run(session_id)
    if report.status in ("extracted", "raw_only"):
        try:
            await WorkingMemory(resources.redis).drop_session(scope, session_id)
        except RedisError as exc:  # it ages out with its TTL
            log.warning("working memory of an ended session not dropped: %s", exc)
    return {
        "status": report.status,
        "outcomes": report.outcomes,
        "forgotten": report.forgotten,
        "summary": report.summary,
    }


@app.task(name=EXTRACT_TASK, **OUTAGE_RETRIES)
def extract_session(tenant_id: str, relationship_id: str, session_id: str) -> dict[str, object]:
    """Turn an ended session into memories (idempotent: a session is extracted once)."""
    scope = scope_of(tenant_id, relationship_id)
    return run(settings_of(app), lambda r: _extract(r, scope, session_id))


async def _reinforce(resources: Resources, scope: RelationshipScope, ids: list[uuid.UUID]) -> int:
    memory = resources.settings.memory
    async with tenant_transaction(resources.sessions, scope.tenant_id) as session:
        # Strength only stretches the forgetting curve: the hot partition is not
        # invalidated for it (it catches up on its next rebuild).
        return await MemoryRepository(session, scope).reinforce(
            ids, datetime.now(UTC), memory.reinforce_step, memory.max_strength
        )


@app.task(name=REINFORCE_TASK)
def reinforce(tenant_id: str, relationship_id: str, memory_ids: list[str]) -> int:
    """Recalled memories are remembered longer (off the request path)."""
    scope = scope_of(tenant_id, relationship_id)
    ids = [uuid.UUID(i) for i in memory_ids]
    return run(settings_of(app), lambda r: _reinforce(r, scope, ids))


async def _reinforce_all(resources: Resources, entries: list[Entry]) -> int:
    """Each relationship in its own transaction; one that fails does not stop the others
    (a redelivered batch may reinforce some twice: reinforcement is best effort)."""
    reinforced = 0
    for tenant_id, relationship_id, memory_ids in entries:
        scope = scope_of(tenant_id, relationship_id)
        try:
            reinforced += await _reinforce(resources, scope, [uuid.UUID(i) for i in memory_ids])
        except DATABASE_ERRORS as exc:
            log.warning("reinforcement of %s failed: %s", relationship_id, exc)
    return reinforced


@app.task(name=REINFORCE_BATCH_TASK)
def reinforce_batch(entries: list[Entry]) -> int:
    """What one API process recalled in one flush window, per relationship."""
    return run(settings_of(app), lambda r: _reinforce_all(r, entries))


async def _expire(resources: Resources) -> int:
    invalidate = services_for(resources).versions.invalidate
    return await expire_due(resources.sessions, invalidate, datetime.now(UTC))


@app.task(name=EXPIRY_TASK)
def expire() -> int:
    """Periodic (beat): memories past ``expires_at`` stop being active."""
    return run(settings_of(app), _expire)


async def _retry_invalidations(resources: Resources) -> dict[str, int]:
    versions = services_for(resources).versions
    report = await retry_recorded(
        resources.redis, versions.replace, time.time(), VERSION_TTL_SECONDS
    )
    return {"invalidated": report.invalidated, "expired": report.expired, "waiting": report.waiting}


@app.task(name=RETRY_INVALIDATIONS_TASK)
def retry_invalidations() -> dict[str, int]:
    """Periodic (beat): invalidations that failed while the hot Redis was away, done once
    it answers (tether.recall.invalidations)."""
    return run(settings_of(app), _retry_invalidations)
