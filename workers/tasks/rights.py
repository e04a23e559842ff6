"""Periodic (beat): retention and the ownership lifecycle, per tenant, with each
tenant's settings read fresh on every run (a change needs no restart)."""

from __future__ import annotations

from datetime import UTC, datetime

from tenancy.relationships.directory import CardCache
from tenancy.relationships.lifecycle import pool_silent
from tether.core.resources import Resources
from tether.retention.sweep import sweep
from workers.app import OWNERSHIP_TASK, RETENTION_TASK, app, settings_of
from workers.runtime import run
from workers.services import services_for


async def _retention(resources: Resources) -> dict[str, int]:
    invalidate = services_for(resources).versions.invalidate
    return await sweep(resources.sessions, invalidate, datetime.now(UTC))


@app.task(name=RETENTION_TASK)
def retention_sweep() -> dict[str, int]:
    """Purge raw turns and expire memories past each tenant's retention (resumable)."""
    return run(settings_of(app), _retention)


async def _ownership(resources: Resources) -> int:
    cards = CardCache(resources.redis, resources.settings.identity.card_ttl_seconds)
    return await pool_silent(resources.sessions, cards, datetime.now(UTC))


@app.task(name=OWNERSHIP_TASK)
def ownership_sweep() -> int:
    """Move relationships whose creator left the user unanswered to the proxy pool."""
    return run(settings_of(app), _ownership)
