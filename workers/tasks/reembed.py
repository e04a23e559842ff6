"""Re-embedding a tenant's vectors after a change of its embedding model (decision 0079)."""

from __future__ import annotations

import uuid

from tenancy.settings.reembed_runs import REEMBED_SWEEP_TASK, REEMBED_TASK
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.reembed.services import PENDING_AFTER, STALE_AFTER, ReembedJob, resumable_runs
from workers.app import OUTAGE_RETRIES, app, settings_of
from workers.runtime import run
from workers.services import services_for


def _job(resources: Resources) -> ReembedJob:
    services = services_for(resources)
    return ReembedJob(
        resources.sessions,
        services.tenant_settings,
        services.embedders,
        services.versions.invalidate,
        resources.settings.identity.tenant_settings_ttl_seconds,
    )


@app.task(name=REEMBED_TASK, **OUTAGE_RETRIES)
def reembed_tenant(tenant_id: str, run_id: str) -> str:
    """Give every memory and knowledge chunk of the tenant a vector of its current model
    (idempotent and resumable; a run another worker holds is skipped)."""
    tenant, run_uuid = TenantId(uuid.UUID(tenant_id)), uuid.UUID(run_id)
    return run(settings_of(app), lambda r: _job(r).run(tenant, run_uuid))


async def _resume(resources: Resources) -> int:
    runs = await resumable_runs(resources.sessions, PENDING_AFTER, STALE_AFTER)
    for tenant_id, run_id in runs:
        await resources.tasks.send(REEMBED_TASK, [str(tenant_id), str(run_id)])
    return len(runs)


@app.task(name=REEMBED_SWEEP_TASK)
def resume_reembed_runs() -> int:
    """Periodic (beat): queue the runs a lost message, a failure or a stopped worker left
    unfinished."""
    return run(settings_of(app), _resume)
