"""Periodic (beat): retention and the ownership lifecycle, per tenant, with each
tenant's settings read fresh on every run (a change needs no restart)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from tenancy.relationships.directory import CardCache
from tenancy.relationships.lifecycle import BATCH, pool_silent_relationships
from tenancy.settings.services import current_settings
from tether.core.database_errors import DATABASE_ERRORS
from tether.core.resources import Resources
from tether.core.tenant_sessions import tenant_transaction
from tether.retention.sweep import sweep, tenant_ids
from workers.app import OWNERSHIP_TASK, RETENTION_TASK, app, settings_of
from workers.runtime import run
from workers.services import services_for

log = logging.getLogger(__name__)


async def _retention(resources: Resources) -> dict[str, int]:
    invalidate = services_for(resources).versions.invalidate
    return await sweep(resources.sessions, invalidate, datetime.now(UTC))


@app.task(name=RETENTION_TASK)
def retention_sweep() -> dict[str, int]:
    """Purge raw turns and expire memories past each tenant's retention (resumable)."""
    return run(settings_of(app), _retention)


async def pool_silent(resources: Resources, now: datetime) -> int:
    """Every tenant's relationships whose creator is silent, to the pool; how many."""
    cards = CardCache(resources.redis, resources.settings.identity.card_ttl_seconds)
    moved = 0
    for tenant_id in await tenant_ids(resources.sessions):
        try:
            while True:
                async with tenant_transaction(resources.sessions, tenant_id) as session:
                    settings = await current_settings(session, tenant_id)
                    batch = await pool_silent_relationships(
                        session, tenant_id, settings.ownership, now, cards
                    )
                moved += batch
                if batch < BATCH:
                    break
        except DATABASE_ERRORS:
            log.exception("ownership sweep of tenant %s failed; it runs again", tenant_id)
    return moved


@app.task(name=OWNERSHIP_TASK)
def ownership_sweep() -> int:
    """Move relationships whose creator left the user unanswered to the proxy pool."""
    return run(settings_of(app), lambda r: pool_silent(r, datetime.now(UTC)))
