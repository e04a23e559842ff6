"""The tenant's audit public key (decision 0073): each tenant gets its own from
``GET /v1/audit/public-key``; it alone checks new checkpoints and exports (the CLI runs
with no secret at all); checkpoints and anchors stored with HMAC before still verify."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import text

from tenancy.audit.anchors import hmac_anchor_signature
from tenancy.audit.chain import canonical
from tenancy.audit.checkpoints import hmac_signature, signed_by
from tenancy.audit.export_format import TRAILER_PURPOSE
from tenancy.audit.models import AuditAnchor
from tenancy.audit.schemas import CheckpointRead
from tenancy.audit.signing import parse_public_key

pytestmark = pytest.mark.integration


async def _events(client, tenant) -> list[dict]:  # type: ignore[no-untyped-def]
    response = await client.get("/v1/audit", params={"limit": 200}, headers=tenant.admin)
    return response.json()["items"]


async def test_each_tenant_gets_its_own_key_and_it_checks_its_checkpoints(
    client, make_tenant, superuser
) -> None:
    a, b = await make_tenant(), await make_tenant()
    compliance_b = await b.key("compliance")
    key_a = (await client.get("/v1/audit/public-key", headers=a.admin)).json()
    key_b = (await client.get("/v1/audit/public-key", headers=compliance_b)).json()
    assert (key_a["tenant_id"], key_b["tenant_id"]) == (a.id, b.id)
    assert key_a["algorithm"] == "ed25519"
    assert key_a["public_key"] != key_b["public_key"]
    assert key_a["key_id"] != key_b["key_id"]
    again = (await client.get("/v1/audit/public-key", headers=a.admin)).json()
    assert again == key_a  # derived, stable
    for role, subject in (("gateway", None), ("operator", "op-1")):
        denied = await client.get("/v1/audit/public-key", headers=await a.key(role, subject))
        assert denied.status_code == 403
    made = (await client.post("/v1/audit/checkpoints", headers=a.admin)).json()
    assert (made["algorithm"], made["key_id"]) == ("ed25519", key_a["key_id"])
    checkpoint = msgspec.convert(made, CheckpointRead)
    assert signed_by(checkpoint, parse_public_key(key_a["public_key"]))
    assert signed_by(checkpoint, parse_public_key(key_a["public_key_pem"]))
    assert not signed_by(checkpoint, parse_public_key(key_b["public_key"]))
    verify = (await client.post("/v1/audit/verify", json=made, headers=a.admin)).json()
    assert verify["ok"] is True, verify
    async with superuser.connect() as conn:  # the HMAC the previous release checks
        stored = (
            await conn.execute(
                text("SELECT signature FROM audit_checkpoints WHERE tenant_id = :t"), {"t": a.id}
            )
        ).scalar_one()
    at = checkpoint.at.isoformat()
    tid = checkpoint.tenant_id
    assert stored == hmac_signature(tid, checkpoint.seq, checkpoint.hash, 1, at)


async def test_a_legacy_hmac_checkpoint_still_verifies(client, make_tenant, superuser) -> None:
    tenant = await make_tenant()
    await tenant.key("operator", "one")
    head = (await _events(client, tenant))[-1]
    at = datetime.now(UTC).replace(microsecond=0)
    tid = uuid.UUID(tenant.id)
    legacy = hmac_signature(tid, head["seq"], head["hash"], 1, at.isoformat())
    insert = text(
        "INSERT INTO audit_checkpoints (id, tenant_id, at, seq, hash, keyed_from, signature) "
        "VALUES (:i, :t, :at, :s, :h, 1, :sig)"  # as the code before 0029 wrote them
    )
    row = {"t": tid, "at": at, "s": head["seq"], "h": head["hash"]}
    async with superuser.begin() as conn:
        await conn.execute(insert, row | {"i": uuid.uuid4(), "sig": legacy})
    latest = (await client.get("/v1/audit/checkpoints/latest", headers=tenant.admin)).json()
    assert (latest["algorithm"], latest["key_id"]) == ("hmac-sha256", None)
    verify = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert (verify["ok"], verify["checkpoints_checked"]) == (True, 1), verify
    against = await client.post("/v1/audit/verify", json=latest, headers=tenant.admin)
    assert against.json()["ok"] is True  # one kept outside, handed back
    async with superuser.begin() as conn:  # a later one whose HMAC is wrong
        later = row | {"i": uuid.uuid4(), "at": at.replace(year=at.year + 1), "sig": legacy}
        await conn.execute(insert, later)
    forged = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert forged["ok"] is False
    assert "signature" in forged["reason"]


async def test_a_legacy_hmac_anchor_still_verifies(client, make_tenant, superuser) -> None:
    tenant = await make_tenant()
    for i in range(3):
        await tenant.key("operator", f"pool-{i}")
    events = await _events(client, tenant)
    middle = events[1]
    anchor = AuditAnchor(
        id=uuid.uuid4(),
        tenant_id=uuid.UUID(tenant.id),
        at=datetime.now(UTC).replace(microsecond=0),
        seq=middle["seq"],
        hash=middle["hash"],
        keyed_from=1,
        run="audit",
        cutoff=datetime(2025, 1, 1, tzinfo=UTC),
    )
    columns = ("id", "tenant_id", "at", "seq", "hash", "keyed_from", "run", "cutoff")
    values = {c: getattr(anchor, c) for c in columns}
    insert = text(
        "INSERT INTO audit_anchors (id, tenant_id, at, seq, hash, keyed_from, run, cutoff, "
        "signature) VALUES (:id, :tenant_id, :at, :seq, :hash, :keyed_from, :run, :cutoff, "
        ":signature)"
    )
    async with superuser.begin() as conn:
        await conn.execute(insert, values | {"signature": hmac_anchor_signature(anchor)})
    verify = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert (verify["ok"], verify["anchored_at_seq"]) == (True, middle["seq"]), verify
    async with superuser.begin() as conn:  # a later anchor whose HMAC is not the server's
        forged = values | {"id": uuid.uuid4(), "seq": middle["seq"] + 1, "signature": "ab" * 32}
        await conn.execute(insert, forged | {"hash": events[2]["hash"]})
    bad = (await client.get("/v1/audit/verify", headers=tenant.admin)).json()
    assert bad["ok"] is False
    assert "anchor" in bad["reason"]


def _cli(
    path: Path, key: Path, home: Path, command: str = "verify-export"
) -> subprocess.CompletedProcess[str]:
    """``tether audit verify-export`` as an auditor runs it: no secret, no database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    env["TETHER_DATA_DIR"] = str(home)
    return subprocess.run(
        [
            sys.executable,
            *("-m", "tether.cli", "audit", command),
            str(path),
            "--public-key",
            str(key),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _forged(body: bytes, key_id: str) -> bytes:
    """The export, one line changed, its trailer recomputed and signed by another key."""
    *lines, last = body.splitlines(keepends=True)
    lines[0] = lines[0].replace(b'"allow"', b'"deny"')
    trailer = json.loads(last)["trailer"] | {"key_id": key_id}
    trailer["digest"] = hashlib.sha256(b"".join(lines)).hexdigest()
    signature = Ed25519PrivateKey.generate().sign(
        f"{TRAILER_PURPOSE}\n{canonical(trailer)}".encode()
    )
    forged = {"trailer": trailer, "signature": signature.hex(), "algorithm": "ed25519"}
    return b"".join([*lines, json.dumps(forged).encode() + b"\n"])


async def test_the_cli_verifies_an_export_with_the_public_key_only(
    client, make_tenant, tmp_path: Path
) -> None:
    tenant = await make_tenant()
    for i in range(3):
        await tenant.key("operator", f"reader-{i}")
    compliance = await tenant.key("compliance")
    body = (await client.get("/v1/audit/export", headers=compliance)).content
    published = await client.get("/v1/audit/public-key", headers=compliance)
    key_file = tmp_path / "tenant-key.json"
    key_file.write_bytes(published.content)  # the whole answer, as an auditor saves it
    home = tmp_path / "auditor"
    files = {
        "good": body,
        "changed": body.replace(b'"allow"', b'"deny"', 1),
        "forged": _forged(body, published.json()["key_id"]),
    }
    for name, content in files.items():
        (tmp_path / f"{name}.jsonl").write_bytes(content)
    ok = _cli(tmp_path / "good.jsonl", key_file, home)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    report = json.loads(ok.stdout)
    assert report["lines"] == len(body.splitlines()) - 1
    assert "public key" in report["checked"]
    assert not (home / "audit.key").exists()  # no secret was made or read
    changed = _cli(tmp_path / "changed.jsonl", key_file, home)
    assert changed.returncode == 1
    assert "digest" in json.loads(changed.stdout)["reason"]
    forged = _cli(tmp_path / "forged.jsonl", key_file, home)
    assert forged.returncode == 1
    assert "signature" in json.loads(forged.stdout)["reason"]
    other = await make_tenant()
    other_key = tmp_path / "other-key.txt"
    other_key.write_text(
        (await client.get("/v1/audit/public-key", headers=other.admin)).json()["public_key"]
    )
    theirs = _cli(tmp_path / "good.jsonl", other_key, home)
    assert theirs.returncode == 1
    assert "key" in json.loads(theirs.stdout)["reason"]


async def test_the_cli_checks_a_kept_checkpoint_with_the_public_key_only(
    client, make_tenant, tmp_path: Path
) -> None:
    tenant = await make_tenant()
    kept = (await client.post("/v1/audit/checkpoints", headers=tenant.admin)).json()
    key_file = tmp_path / "key.json"
    key_file.write_bytes((await client.get("/v1/audit/public-key", headers=tenant.admin)).content)
    home = tmp_path / "auditor"
    good, edited = tmp_path / "kept.json", tmp_path / "edited.json"
    good.write_text(json.dumps(kept))
    edited.write_text(json.dumps(kept | {"seq": kept["seq"] + 1}))
    ok = _cli(good, key_file, home, "verify-checkpoint")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert json.loads(ok.stdout)["ok"] is True
    bad = _cli(edited, key_file, home, "verify-checkpoint")
    assert bad.returncode == 1
    assert "signature" in json.loads(bad.stdout)["reason"]
