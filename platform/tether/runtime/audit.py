"""``tether audit verify TENANT``: the operator's (or an auditor's) check of a tenant's
chain, run against the database directly, with the server's audit secret; and
``tether audit verify-export FILE``, which needs the secret (or, with ``--public-key``,
only the tenant's public key) but no database."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from tenancy.access.repositories import TenantRepository
from tenancy.audit.checkpoints import signed_by, write_checkpoint
from tenancy.audit.export_format import verify_stream
from tenancy.audit.schemas import CheckpointRead
from tenancy.audit.sealing import seal_all
from tenancy.audit.services import AuditService
from tenancy.audit.signing import PublicKeyInvalid, parse_public_key
from tether.core.database import create_engine, create_session_factory, transaction
from tether.core.ids import TenantId
from tether.core.settings import Settings
from tether.core.tenant_sessions import tenant_transaction
from tether.runtime.preflight import StartupError


def _checkpoint(path: str | None) -> CheckpointRead | None:
    return None if path is None else _read_checkpoint(path)


def _read_checkpoint(path: str) -> CheckpointRead:
    try:
        return msgspec.json.decode(Path(path).read_bytes(), type=CheckpointRead)
    except (OSError, msgspec.DecodeError) as exc:
        raise StartupError(
            f"cannot read checkpoint {path}: {exc}",
            "pass a file from GET /v1/audit/checkpoints/latest",
        ) from exc


async def _tenant(sessions: Any, name_or_id: str) -> TenantId:
    try:
        return TenantId(uuid.UUID(name_or_id))
    except ValueError:
        pass
    async with transaction(sessions) as session:
        found = await TenantRepository(session).id_by_name(name_or_id)
    if found is None:
        raise StartupError(f"no tenant named {name_or_id!r}", "pass its name or id")
    return found


def verify_tenant(
    settings: Settings, tenant: str, checkpoint_file: str | None, write_to: str | None
) -> dict[str, Any]:
    """Seal, verify and (optionally) write a fresh signed checkpoint to ``write_to``."""
    given = _checkpoint(checkpoint_file)

    async def run() -> dict[str, Any]:
        engine = create_engine(settings)
        sessions = create_session_factory(engine)
        try:
            tenant_id = await _tenant(sessions, tenant)
            await seal_all(sessions, tenant_id, settings.audit.seal_batch)
            async with tenant_transaction(sessions, tenant_id) as session:
                report = await AuditService(session, tenant_id).verify(given)
            result: dict[str, Any] = {"tenant_id": str(tenant_id), **msgspec.to_builtins(report)}
            if report.ok and write_to is not None:
                async with tenant_transaction(sessions, tenant_id) as session:
                    made = await write_checkpoint(session, tenant_id)
                await asyncio.to_thread(Path(write_to).write_bytes, msgspec.json.encode(made))
                result["checkpoint_written"] = write_to
            return result
        finally:
            await engine.dispose()

    return asyncio.run(run())


def _key_text(given: str) -> str:
    """The key itself, or the content of the file it names; from the JSON answer of
    ``GET /v1/audit/public-key``, its ``public_key``."""
    path = Path(given)
    try:
        text = path.read_text(encoding="utf-8") if path.is_file() else given
    except (OSError, UnicodeDecodeError) as exc:
        raise StartupError(f"cannot read {given}: {exc}", "pass the key or its file") from exc
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    return str(parsed.get("public_key", "")) if isinstance(parsed, dict) else text


def load_public_key(given: str) -> Ed25519PublicKey:
    try:
        return parse_public_key(_key_text(given))
    except PublicKeyInvalid as exc:
        raise StartupError(
            f"--public-key: {exc}", "pass public_key from GET /v1/audit/public-key"
        ) from exc


def verify_checkpoint_file(path: str, public_key: str) -> dict[str, Any]:
    """Check a kept checkpoint's signature with the tenant's public key alone (its chain
    is compared with it by ``POST /v1/audit/verify``, which needs the database)."""
    checkpoint = _read_checkpoint(path)
    key = load_public_key(public_key)
    ok = signed_by(checkpoint, key)
    report: dict[str, Any] = {"file": path, "ok": ok, "seq": checkpoint.seq}
    if not ok:
        report["reason"] = (
            f"the checkpoint is signed with {checkpoint.algorithm!r}: only the server's "
            "secret checks it"
            if checkpoint.algorithm != "ed25519"
            else "the signature does not match the public key (edited, or another tenant's)"
        )
    return report


def verify_export_file(path: str, public_key: str | None = None) -> dict[str, Any]:
    """Check one signed export file; what was checked and the first bad line."""
    key = None if public_key is None else load_public_key(public_key)
    try:
        with Path(path).open("rb") as stream:
            check = verify_stream(stream, key)
    except OSError as exc:
        raise StartupError(
            f"cannot read {path}: {exc}", "pass a file from /v1/audit/export"
        ) from exc
    report: dict[str, Any] = {
        "file": path,
        "ok": check.ok,
        "lines": check.lines,
        # With the public key only: signature, count and digest, not each line's MAC.
        "checked": "signature, line MACs, count, digest"
        if check.line_macs_checked
        else "signature, count, digest (public key: a change is found, not located)",
    }
    if check.first_bad_line is not None:
        report["first_bad_line"] = check.first_bad_line
    if check.reason is not None:
        report["reason"] = check.reason
    if check.trailer is not None:
        report["trailer"] = check.trailer
    return report
