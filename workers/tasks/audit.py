"""Periodic audit work (beat): sealing access events into the chain, signed checkpoints."""

from __future__ import annotations

from tenancy.audit.periodic import checkpoint_every_tenant, seal_every_tenant
from tether.core.resources import Resources
from workers.app import AUDIT_CHECKPOINT_TASK, AUDIT_SEAL_TASK, app, settings_of
from workers.runtime import run


async def _seal(resources: Resources) -> int:
    return await seal_every_tenant(resources.sessions, resources.settings.audit.seal_batch)


async def _checkpoint(resources: Resources) -> int:
    return await checkpoint_every_tenant(resources.sessions, resources.settings.audit.seal_batch)


@app.task(name=AUDIT_SEAL_TASK)
def seal() -> int:
    """Periodic: seal every tenant's unsealed access events (a Merkle root per batch)."""
    return run(settings_of(app), _seal)


@app.task(name=AUDIT_CHECKPOINT_TASK)
def checkpoint() -> int:
    """Periodic: sign and keep a checkpoint of every tenant's chain head."""
    return run(settings_of(app), _checkpoint)
