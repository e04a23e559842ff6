"""A chain written before the keyed chain (migration 0022) still verifies after it, and
continues keyed (decision 0043)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from tenancy.audit.chain import GENESIS, event_hash
from tenancy.audit.log import SYSTEM, AuditLog
from tenancy.audit.services import AuditService
from tether.core import migrations
from tether.core.ids import TenantId, new_id
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.core.tenant_sessions import tenant_transaction

pytestmark = pytest.mark.integration


async def _legacy_chain(superuser, tenant_id: uuid.UUID, n: int) -> None:
    """Rows as the code before 0022 wrote them: plain SHA-256 links."""
    async with superuser.begin() as conn:
        await conn.execute(
            text("INSERT INTO tenants (id, name, region) VALUES (:t, :n, 'local')"),
            {"t": tenant_id, "n": f"legacy-{tenant_id.hex[:8]}"},
        )
        prev = GENESIS
        for seq in range(1, n + 1):
            fields = {
                "id": new_id(),
                "tenant_id": tenant_id,
                "seq": seq,
                "at": datetime.now(UTC),
                "actor_key_id": None,
                "actor_role": "system",
                "actor_subject": None,
                "action": "key.issue",
                "object": "api_key",
                "decision": "allow",
                "matched_rule": None,
                "relationship_id": None,
                "global_user_id": None,
                "request_id": None,
                "detail": {"n": seq},
            }
            digest = event_hash(prev, fields)
            await conn.execute(
                text(
                    "INSERT INTO audit_events (id, tenant_id, seq, at, actor_key_id, actor_role, "
                    "actor_subject, action, object, decision, matched_rule, relationship_id, "
                    "global_user_id, request_id, detail, prev_hash, hash) VALUES (:id, "
                    ":tenant_id, :seq, :at, :actor_key_id, :actor_role, :actor_subject, :action, "
                    ":object, :decision, :matched_rule, :relationship_id, :global_user_id, "
                    ":request_id, CAST(:detail AS jsonb), :prev, :hash)"
                ),
                fields | {"detail": f'{{"n": {seq}}}', "prev": prev, "hash": digest},
            )
            prev = digest
        await conn.execute(
            text("INSERT INTO audit_chain_heads (tenant_id, seq, hash) VALUES (:t, :s, :h)"),
            {"t": tenant_id, "s": n, "h": prev},
        )


async def test_a_legacy_chain_verifies_after_the_migration_and_continues_keyed(
    client, settings: Settings, resources: Resources, superuser
) -> None:
    owner = settings.require_owner_url()
    await asyncio.to_thread(migrations.downgrade, owner, "0019")
    tenant_id = TenantId(new_id())
    try:
        await _legacy_chain(superuser, tenant_id, 3)
    finally:
        await asyncio.to_thread(migrations.upgrade, owner)
    async with tenant_transaction(resources.sessions, tenant_id) as session:
        before = await AuditService(session, tenant_id).verify()
        keyed_from = await session.scalar(text("SELECT keyed_from FROM audit_chain_heads"))
    assert before.ok, before
    assert keyed_from == 4
    async with tenant_transaction(resources.sessions, tenant_id) as session:
        await AuditLog(session).record(tenant_id, SYSTEM, "key.issue", "api_key")
    async with tenant_transaction(resources.sessions, tenant_id) as session:
        after = await AuditService(session, tenant_id).verify()
        row = (
            await session.execute(text("SELECT hash, prev_hash FROM audit_events WHERE seq = 4"))
        ).one()
    assert after.ok, after
    assert after.checked == 4
    assert row.hash != row.prev_hash
