"""Audit retention (decision 0072): the sweep removes events older than
``retention.audit_years`` behind a signed anchor, and verification of what remains
still holds, and still catches a change, a removal and a forged or removed anchor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import DBAPIError

from tenancy.audit.models import AuditEvent
from tenancy.audit.services import AuditService
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.core.tenant_sessions import tenant_transaction
from tether.retention import sweep as retention
from workers.services import services_for

pytestmark = pytest.mark.integration


async def _settings(client, tenant, change: dict):  # type: ignore[no-untyped-def]
    etag = (await client.get("/v1/tenant/settings", headers=tenant.admin)).headers["etag"]
    written = await client.put(
        "/v1/tenant/settings", json=change, headers=tenant.admin | {"If-Match": etag}
    )
    assert written.status_code == 200, written.text


async def _events(client, tenant) -> list[dict]:  # type: ignore[no-untyped-def]
    response = await client.get("/v1/audit", params={"limit": 200}, headers=tenant.admin)
    return response.json()["items"]


async def _aged_tenant(client, make_tenant):  # type: ignore[no-untyped-def]
    """A tenant whose first events are "old": the sweep runs as if a year had passed
    since ``boundary``, so everything before it is older than ``audit_years = 1``."""
    tenant = await make_tenant()
    for i in range(4):
        await tenant.key("operator", f"pool-{i}")
    await _settings(client, tenant, {"retention": {"audit_years": 1}})
    kept = (await client.post("/v1/audit/checkpoints", headers=tenant.admin)).json()
    boundary = datetime.now(UTC)
    for i in range(3):
        await tenant.key("operator", f"late-{i}")
    return tenant, kept, boundary.replace(year=boundary.year + 1)


def _tid(tenant) -> TenantId:  # type: ignore[no-untyped-def]
    return TenantId(uuid.UUID(tenant.id))


async def _sweep(resources: Resources, tenant, now: datetime, batch: int = 1000) -> dict:  # type: ignore[no-untyped-def]
    invalidate = services_for(resources).versions.invalidate
    return await retention.sweep_tenant(resources.sessions, _tid(tenant), invalidate, now, batch)


async def test_old_events_go_and_the_rest_still_verifies(client, make_tenant, resources) -> None:
    tenant, kept, later = await _aged_tenant(client, make_tenant)
    before = await _events(client, tenant)
    old = [e for e in before if e["seq"] <= kept["seq"]]
    removed = await _sweep(resources, tenant, later)
    assert removed == {"audit": len(old)}
    after = await _events(client, tenant)
    assert after[0]["seq"] == kept["seq"] + 1
    assert after[0]["prev_hash"] == old[-1]["hash"]
    verify = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert verify["ok"] is True, verify
    assert verify["anchored_at_seq"] == kept["seq"]
    against = await client.post("/v1/audit/verify", json=kept, headers=tenant.admin)
    assert against.json()["ok"] is True  # a checkpoint of the pruned part still holds
    sweep = [e for e in after if e["action"] == "retention.sweep"]
    assert [(e["object"], e["detail"]["removed"]) for e in sweep] == [("audit", len(old))]
    export = await client.get("/v1/audit/export", headers=tenant.admin)
    trailer = json.loads(export.content.splitlines()[-1])["trailer"]
    assert trailer["chain"]["anchored_at_seq"] == kept["seq"]


async def test_tampering_after_pruning_is_still_detected(
    client, make_tenant, resources, superuser
) -> None:
    tenant, _, later = await _aged_tenant(client, make_tenant)
    await _sweep(resources, tenant, later)
    first = (await _events(client, tenant))[0]
    async with superuser.connect() as conn:
        await conn.execute(text("SET session_replication_role = replica"))
        await conn.execute(text("DELETE FROM audit_events WHERE id = :i"), {"i": first["id"]})
        await conn.commit()
    verify = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert verify["ok"] is False
    assert verify["first_bad_seq"] == first["seq"] + 1
    assert "gap" in verify["reason"]


async def test_a_forged_or_removed_anchor_is_detected(
    client, make_tenant, resources, superuser
) -> None:
    tenant, _, later = await _aged_tenant(client, make_tenant)
    await _sweep(resources, tenant, later)
    async with superuser.connect() as conn:
        await conn.execute(text("SET session_replication_role = replica"))
        await conn.execute(
            text("UPDATE audit_anchors SET seq = seq + 2 WHERE tenant_id = :t"), {"t": tenant.id}
        )
        await conn.commit()
    forged = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert forged["ok"] is False
    assert "anchor" in forged["reason"]
    async with superuser.connect() as conn:
        await conn.execute(text("SET session_replication_role = replica"))
        await conn.execute(text("DELETE FROM audit_anchors WHERE tenant_id = :t"), {"t": tenant.id})
        await conn.commit()
    gone = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert gone["ok"] is False
    assert "gap" in gone["reason"]


async def test_an_interrupted_pruning_resumes(client, make_tenant, resources) -> None:
    tenant, kept, later = await _aged_tenant(client, make_tenant)
    cutoff = retention.years_before(later, 1)
    calls = 0

    async def interrupted(session, tenant_id, cutoff, limit):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls == 2:
            raise ConnectionError("the worker died mid-sweep")
        return await retention.prune_audit(session, tenant_id, cutoff, limit)

    with pytest.raises(ConnectionError):
        await retention.run_kind(resources.sessions, _tid(tenant), "audit", cutoff, interrupted, 2)
    half = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert (half["ok"], half["anchored_at_seq"]) == (True, 2)  # one batch went, and verifies
    removed = await _sweep(resources, tenant, later, batch=2)
    assert removed == {"audit": kept["seq"] - 2}
    runs = await client.get("/v1/tenant/retention-runs", headers=tenant.admin)
    [run] = [r for r in runs.json()["items"] if r["kind"] == "audit"]
    assert run["removed"] == kept["seq"]  # resumed: none twice, none skipped
    assert run["finished_at"] is not None
    verify = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert (verify["ok"], verify["anchored_at_seq"]) == (True, kept["seq"])


async def test_the_service_cannot_prune_without_an_anchor(make_tenant, resources) -> None:
    tenant = await make_tenant()
    with pytest.raises(DBAPIError, match="no retention anchor"):
        async with tenant_transaction(resources.sessions, _tid(tenant)) as session:
            await session.execute(select(func.tether_audit_prune(1)))
    async with tenant_transaction(resources.sessions, _tid(tenant)) as session:
        count = select(func.count()).select_from(AuditEvent)
        assert (await session.execute(count)).scalar_one() >= 1


async def test_the_cli_verifies_a_pruned_chain(
    client, make_tenant, resources, settings: Settings
) -> None:
    tenant, _, later = await _aged_tenant(client, make_tenant)
    await _sweep(resources, tenant, later)
    env = os.environ | {
        "TETHER_DATABASE_URL": settings.require_database_url(),
        "TETHER_REDIS_URL": settings.require_redis_url(),
        "TETHER_DATA_DIR": str(settings.data_dir),
        "TETHER_AUDIT__SECRET": settings.audit.secret.get_secret_value(),  # type: ignore[union-attr]
    }
    done = subprocess.run(  # noqa: ASYNC221 - the test waits for the CLI on purpose
        [sys.executable, "-m", "tether.cli", "audit", "verify", tenant.id],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["anchored_at_seq"] >= 1


async def test_a_verification_under_way_goes_on_past_a_pruning(
    client, make_tenant, resources
) -> None:
    tenant, kept, later = await _aged_tenant(client, make_tenant)
    async with tenant_transaction(resources.sessions, _tid(tenant)) as session:
        service = AuditService(session, _tid(tenant))
        step = await service.verify_step(await service.start(), 2)
    assert (step.after_seq, step.bad_id) == (2, None)
    await _sweep(resources, tenant, later)  # removes past where the verification stands
    async with tenant_transaction(resources.sessions, _tid(tenant)) as session:
        service = AuditService(session, _tid(tenant))
        while not step.done:
            step = await service.verify_step(step, 2)
        step = await service.finish(step)
    assert (step.bad_id, step.reason, step.anchored_at) == (None, None, kept["seq"])
