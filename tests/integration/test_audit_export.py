"""Signed, streamed audit exports (decision 0071): what they contain, that they are
recorded, that filters are validated, and that `tether audit verify-export` passes a
good file and names the first bad line of a changed, shortened or cut one."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tracemalloc
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from tenancy.audit.export_format import verify_stream
from tenancy.audit.exports import export_stream, plan_export
from tenancy.audit.log import SYSTEM
from tenancy.audit.services import AuditFilter
from tests.support import resolve_body
from tether.core.ids import TenantId
from tether.core.settings import Settings

pytestmark = pytest.mark.integration


async def _tenant(make_tenant, keys: int = 3):  # type: ignore[no-untyped-def]
    tenant = await make_tenant()
    for i in range(keys):
        await tenant.key("operator", f"pool-{i}")
    return tenant


def _check(body: bytes):  # type: ignore[no-untyped-def]
    return verify_stream(io.BytesIO(body))


async def test_an_export_is_signed_recorded_and_verifies(client, make_tenant) -> None:
    tenant = await _tenant(make_tenant)
    compliance = await tenant.key("compliance")
    response = await client.get(
        "/v1/audit/export", params={"action": "key.issue"}, headers=compliance
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    assert "attachment" in response.headers["content-disposition"]
    *entries, trailer = [json.loads(line) for line in response.content.splitlines()]
    assert [e["action"] for e in entries] == ["key.issue"] * 5  # admin, 3 operators, compliance
    assert all(
        {"id", "seq", "hash", "prev_hash", "decision", "line_mac"} <= e.keys() for e in entries
    )
    body = trailer["trailer"]
    assert body["count"] == 5
    assert body["filters"] == {"action": "key.issue"}
    assert body["kind"] == "audit"
    assert body["tenant_id"] == tenant.id
    assert body["chain"]["head_seq"] >= entries[-1]["seq"]
    check = _check(response.content)
    assert (check.ok, check.lines) == (True, 5)
    recorded = await client.get(
        "/v1/audit", params={"action": "audit.export"}, headers=tenant.admin
    )
    [event] = recorded.json()["items"]
    assert event["detail"] == {
        "export_id": body["export_id"],
        "kind": "audit",
        "filters": {"action": "key.issue"},
    }
    assert event["actor_role"] == "compliance"


async def test_a_changed_removed_or_cut_line_is_named(client, make_tenant) -> None:
    tenant = await _tenant(make_tenant)
    good = (await client.get("/v1/audit/export", headers=tenant.admin)).content
    lines = good.splitlines(keepends=True)
    assert len(lines) >= 5
    changed = lines.copy()
    changed[2] = changed[2].replace(b'"decision":"allow"', b'"decision":"deny"')
    check = _check(b"".join(changed))
    assert (check.ok, check.first_bad_line) == (False, 3)
    removed = lines[:1] + lines[2:]
    assert _check(b"".join(removed)).first_bad_line == 2
    last_entry_gone = lines[:-2] + lines[-1:]
    check = _check(b"".join(last_entry_gone))
    assert check.ok is False
    assert check.first_bad_line == len(lines) - 1
    added = [*lines[:-1], lines[0], lines[-1]]
    assert _check(b"".join(added)).ok is False
    cut = good[: len(good) - 40]
    check = _check(cut)
    assert check.ok is False
    assert "trailer" in (check.reason or "")
    forged = json.loads(lines[-1])
    forged["trailer"]["count"] -= 1
    tail = json.dumps(forged).encode() + b"\n"
    assert "signature" in (_check(b"".join([*lines[:-2], tail])).reason or "")


async def test_bad_filters_are_a_problem_and_other_roles_are_refused(client, make_tenant) -> None:
    tenant = await make_tenant()
    gateway = await tenant.key("gateway")
    now = datetime.now(UTC)
    for params in (
        {"since": now.isoformat(), "until": (now - timedelta(hours=1)).isoformat()},
        {"since": "2026-12-07T10:00:00"},  # no time zone
        {"since": "yesterday"},
        {"decision": "maybe"},
        {"kind": "everything"},
        {"kind": "access", "action": "key.issue"},
        {"purpose": "context"},
        {"relationship_id": "not-a-uuid"},
    ):
        response = await client.get("/v1/audit/export", params=params, headers=tenant.admin)
        assert response.status_code in (400, 422), (params, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")
    assert (await client.get("/v1/audit/export", headers=gateway)).status_code == 403
    recorded = await client.get(
        "/v1/audit", params={"action": "audit.export"}, headers=tenant.admin
    )
    assert recorded.json()["items"] == []  # a refused export is not an export


async def test_the_access_log_exports_signed_and_only_the_tenants_own(client, make_tenant) -> None:
    tenant, other = await make_tenant(), await make_tenant()
    since = datetime.now(UTC) - timedelta(seconds=1)
    relationships = []
    for handle in (tenant, other):
        gateway = await handle.key("gateway")
        made = await client.post(
            "/v1/resolve", json=resolve_body(f"u-{uuid.uuid4().hex[:8]}", "p-1"), headers=gateway
        )
        assert made.status_code in (200, 201), made.text
        rid = made.json()["relationship_id"]
        relationships.append(rid)
        listed = await client.get(f"/v1/relationships/{rid}/memories", headers=gateway)
        assert listed.status_code == 200, listed.text
    mine = await client.get(
        "/v1/audit/export",
        params={"kind": "access", "since": since.isoformat()},
        headers=tenant.admin,
    )
    assert mine.status_code == 200, mine.text
    *entries, trailer = [json.loads(line) for line in mine.content.splitlines()]
    assert trailer["trailer"]["kind"] == "access"
    assert [e["relationship_id"] for e in entries] == [relationships[0]]
    assert entries[0]["purpose"] == "memory_list"
    assert entries[0]["sealed_seq"] <= trailer["trailer"]["chain"]["head_seq"]
    assert _check(mine.content).ok is True
    theirs = await client.get("/v1/audit/export", params={"kind": "access"}, headers=other.admin)
    assert relationships[0].encode() not in theirs.content
    assert relationships[1].encode() in theirs.content


async def test_a_long_range_streams_in_batches(resources, make_tenant) -> None:
    tenant = await _tenant(make_tenant, 6)
    tenant_id = TenantId(uuid.UUID(tenant.id))
    plan = await plan_export(resources.sessions, tenant_id, SYSTEM, AuditFilter())
    chunks = [chunk async for chunk in export_stream(resources.sessions, plan, batch=2)]
    assert len(chunks) >= 5  # one chunk per batch of two, then the trailer
    body = b"".join(chunks)
    check = _check(body)
    assert check.ok is True
    assert check.lines == plan.chain["head_seq"]
    seqs = [json.loads(line)["seq"] for line in body.splitlines()[:-1]]
    assert seqs == list(range(1, plan.chain["head_seq"] + 1))


def test_the_cli_verifies_an_export_offline(settings: Settings, tmp_path: Path) -> None:
    from tenancy.audit.export_format import LineSigner

    tenant_id = uuid.uuid4()
    signer = LineSigner(tenant_id, "e-1")
    lines = [signer.line(json.dumps({"seq": i, "action": "x"}).encode()) for i in (1, 2, 3)]
    trailer = signer.trailer(tenant_id, {"tenant_id": str(tenant_id), "export_id": "e-1"})
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_bytes(b"".join([*lines, trailer]))
    bad.write_bytes(b"".join([lines[0], lines[1].replace(b'"x"', b'"y"'), lines[2], trailer]))
    env = os.environ | {
        "TETHER_DATA_DIR": str(tmp_path),  # no database: the file and the secret only
        "TETHER_AUDIT__SECRET": settings.audit.secret.get_secret_value(),  # type: ignore[union-attr]
    }

    def verify(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tether.cli", "audit", "verify-export", str(path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    ok = verify(good)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["lines"] == 3
    broken = verify(bad)
    assert broken.returncode == 1
    assert json.loads(broken.stdout)["first_bad_line"] == 2


async def test_a_large_range_streams_in_bounded_memory(resources, make_tenant, superuser) -> None:
    """40,000 events (~24 MB of export) stream with the memory of about one batch of
    1,000 rows (measured: a peak of ~5 MB of Python allocations), not of the range."""
    tenant = await make_tenant()
    tenant_id = TenantId(uuid.UUID(tenant.id))
    n = 40_000
    async with superuser.connect() as conn:
        # Bulk rows as the owner (their links are not real: this measures the stream).
        await conn.execute(
            text(
                "INSERT INTO audit_events (id, tenant_id, seq, at, action, object, decision, "
                "detail, prev_hash, hash) SELECT gen_random_uuid(), :t, 1000 + g, now(), "
                "'bulk.write', 'relationship_memory', 'allow', "
                "jsonb_build_object('memory_id', gen_random_uuid(), 'n', g), "
                "repeat('a', 64), repeat('b', 64) FROM generate_series(1, :n) AS g"
            ),
            {"t": tenant.id, "n": n},
        )
        await conn.execute(
            text("UPDATE audit_chain_heads SET seq = 1000 + :n WHERE tenant_id = :t"),
            {"t": tenant.id, "n": n},
        )
        await conn.commit()
    plan = await plan_export(
        resources.sessions, tenant_id, SYSTEM, AuditFilter(action="bulk.write")
    )
    total, lines = 0, 0
    tracemalloc.start()
    try:
        async for chunk in export_stream(resources.sessions, plan):
            total += len(chunk)
            lines += chunk.count(b"\n")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lines == n + 1
    assert peak < 10_000_000 < total, (peak, total)
