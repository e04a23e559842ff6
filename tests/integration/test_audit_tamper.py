"""Tamper evidence that holds (decisions 0043, 0044): the chain is keyed, so a forger who
rewrites a row and recomputes every following link without the server's secret is
caught; signed head checkpoints, stored and kept outside, catch a truncated tail."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from sqlalchemy import text

from tenancy.audit.chain import HASHED_FIELDS, event_hash
from tether.core.settings import Settings

pytestmark = pytest.mark.integration


async def _events(client, tenant) -> list[dict]:
    response = await client.get("/v1/audit", params={"limit": 200}, headers=tenant.admin)
    assert response.status_code == 200, response.text
    return response.json()["items"]


async def _tenant_with_events(make_tenant, n: int = 4):  # type: ignore[no-untyped-def]
    tenant = await make_tenant()
    for i in range(n):
        await tenant.key("operator", f"pool-{i}")
    return tenant


async def _forge_unkeyed(superuser, tenant_id: str, target_seq: int) -> None:
    """Rewrite one row and relink everything after it with plain SHA-256, as a forger
    without the key would, head included."""
    async with superuser.connect() as conn:
        await conn.execute(text("SET session_replication_role = replica"))
        rows = (
            await conn.execute(
                text("SELECT * FROM audit_events WHERE tenant_id = :t ORDER BY seq"),
                {"t": tenant_id},
            )
        ).mappings()
        prev = None
        for row in [dict(r) for r in rows]:
            if row["seq"] < target_seq:
                prev = row["hash"]
                continue
            if row["seq"] == target_seq:
                row["actor_subject"] = "someone-else"
            fields = {name: row[name] for name in HASHED_FIELDS}
            digest = event_hash(prev, fields)
            await conn.execute(
                text(
                    "UPDATE audit_events SET actor_subject = :s, prev_hash = :p, hash = :h "
                    "WHERE id = :i"
                ),
                {"s": row["actor_subject"], "p": prev, "h": digest, "i": row["id"]},
            )
            prev = digest
        await conn.execute(
            text("UPDATE audit_chain_heads SET hash = :h WHERE tenant_id = :t"),
            {"h": prev, "t": tenant_id},
        )
        await conn.commit()


async def test_a_row_rewritten_and_relinked_without_the_key_is_detected(
    client, make_tenant, superuser
) -> None:
    tenant = await _tenant_with_events(make_tenant)
    events = await _events(client, tenant)
    await _forge_unkeyed(superuser, tenant.id, events[2]["seq"])
    verify = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert verify["ok"] is False
    assert verify["first_bad_seq"] == events[2]["seq"]
    assert verify["first_bad_id"] == events[2]["id"]
    assert "changed" in verify["reason"]


async def _truncate(superuser, tenant_id: str, keep: int) -> None:
    """Remove the tail after ``keep`` and point the head at the new last event."""
    async with superuser.connect() as conn:
        await conn.execute(text("SET session_replication_role = replica"))
        await conn.execute(
            text("DELETE FROM audit_events WHERE tenant_id = :t AND seq > :k"),
            {"t": tenant_id, "k": keep},
        )
        await conn.execute(
            text(
                "UPDATE audit_chain_heads SET seq = :k, hash = (SELECT hash FROM audit_events "
                "WHERE tenant_id = :t AND seq = :k) WHERE tenant_id = :t"
            ),
            {"t": tenant_id, "k": keep},
        )
        await conn.commit()


async def test_a_truncated_tail_is_caught_by_the_stored_checkpoint(
    client, make_tenant, superuser
) -> None:
    tenant = await _tenant_with_events(make_tenant)
    compliance = await tenant.key("compliance")
    made = await client.post("/v1/audit/checkpoints", headers=compliance)
    assert made.status_code == 201, made.text
    checkpoint = made.json()
    latest = await client.get("/v1/audit/checkpoints/latest", headers=compliance)
    assert latest.json() == checkpoint
    assert (await client.get("/v1/audit/verify", headers=compliance)).json()["ok"] is True
    await _truncate(superuser, tenant.id, checkpoint["seq"] - 2)
    verify = (await client.get("/v1/audit/verify", headers=compliance)).json()
    assert verify["ok"] is False
    assert "truncated" in verify["reason"]
    assert verify["first_bad_seq"] == checkpoint["seq"] - 1


async def test_a_kept_checkpoint_catches_truncation_when_the_stored_ones_are_gone(
    client, make_tenant, superuser
) -> None:
    tenant = await _tenant_with_events(make_tenant)
    kept = (await client.post("/v1/audit/checkpoints", headers=tenant.admin)).json()
    await _truncate(superuser, tenant.id, kept["seq"] - 1)
    async with superuser.connect() as conn:
        await conn.execute(text("SET session_replication_role = replica"))
        await conn.execute(
            text("DELETE FROM audit_checkpoints WHERE tenant_id = :t"), {"t": tenant.id}
        )
        await conn.commit()
    plain = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert plain["ok"] is True  # nothing inside Tether remembers the lost tail...
    against = await client.post("/v1/audit/verify", json=kept, headers=tenant.admin)
    assert against.status_code == 200, against.text
    assert against.json()["ok"] is False  # ...the checkpoint kept outside does
    assert "truncated" in against.json()["reason"]


async def test_a_forged_checkpoint_is_refused(client, make_tenant) -> None:
    tenant = await _tenant_with_events(make_tenant, 1)
    kept = (await client.post("/v1/audit/checkpoints", headers=tenant.admin)).json()
    forged = kept | {"seq": kept["seq"] + 5}
    verify = (await client.post("/v1/audit/verify", json=forged, headers=tenant.admin)).json()
    assert verify["ok"] is False
    assert "signature" in verify["reason"]
    other = await make_tenant()
    theirs = (await client.post("/v1/audit/verify", json=kept, headers=other.admin)).json()
    assert theirs["ok"] is False  # another tenant's checkpoint is not this chain's


async def test_checkpoint_routes_need_an_audit_key(client, make_tenant) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    assert (
        await client.get("/v1/audit/checkpoints/latest", headers=tenant.admin)
    ).status_code == 404
    assert (await client.post("/v1/audit/checkpoints", headers=gateway)).status_code == 403
    assert (await client.get("/v1/audit/checkpoints/latest", headers=gateway)).status_code == 403
    bad = await client.post("/v1/audit/verify", json={"seq": "x"}, headers=tenant.admin)
    assert bad.status_code in (400, 422)


def test_the_cli_reports_the_first_bad_link(settings: Settings, tmp_path) -> None:
    env = os.environ | {
        "TETHER_DATABASE_URL": settings.require_database_url(),
        "TETHER_REDIS_URL": settings.require_redis_url(),
        "TETHER_DATA_DIR": str(settings.data_dir),
    }

    def tether(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tether.cli", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    created = json.loads(tether("tenant", "create", "audit-cli").stdout)
    saved = tmp_path / "checkpoint.json"
    good = tether("audit", "verify", "audit-cli", "--write-checkpoint", str(saved))
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["ok"] is True
    kept = json.loads(saved.read_text())
    assert kept["tenant_id"] == created["tenant_id"]
    assert kept["seq"] >= 1
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(kept | {"hash": "0" * 64}))
    bad = tether("audit", "verify", created["tenant_id"], "--checkpoint", str(forged))
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["ok"] is False
