"""API shapes of the audit log."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any

import msgspec


class AuditEventRead(msgspec.Struct):
    id: uuid.UUID
    seq: int
    at: datetime
    actor_key_id: uuid.UUID | None
    actor_role: str | None
    actor_subject: str | None
    action: str
    object: str
    decision: str
    matched_rule: str | None
    relationship_id: uuid.UUID | None
    global_user_id: uuid.UUID | None
    request_id: str | None
    detail: dict[str, Any]
    prev_hash: str
    hash: str


class AuditPage(msgspec.Struct):
    items: list[AuditEventRead]
    next_cursor: str | None


class AuditVerification(msgspec.Struct, omit_defaults=True):
    ok: bool
    checked: int
    first_bad_id: uuid.UUID | None = None
    first_bad_seq: int | None = None
    reason: str | None = None
    # Access events covered by the seals checked, and those not sealed yet.
    access_events_sealed: int = 0
    access_events_unsealed: int = 0
    # The checkpoints compared with the chain (the latest stored, and the one given).
    checkpoints_checked: int = 0
    # Retention removed the events up to this seq; verification started from its
    # signed anchor (decision 0072). 0: from the first event.
    anchored_at_seq: int = 0


# Bounds of a checkpoint handed back to ``POST /v1/audit/verify`` (it is input then).
_SEQ = msgspec.Meta(ge=0, le=2**63 - 1)
_HEX = msgspec.Meta(max_length=128, pattern="^[0-9a-f]*$")


class CheckpointRead(msgspec.Struct):
    """A signed statement of the chain's head: keep it, and hand it back to verify."""

    tenant_id: uuid.UUID
    seq: Annotated[int, _SEQ]
    hash: Annotated[str, _HEX]
    keyed_from: Annotated[int, _SEQ]
    at: datetime
    signature: Annotated[str, _HEX]
    # "ed25519" (checkpoints since decision 0073: check with ``GET /v1/audit/public-key``)
    # or "hmac-sha256" (older ones: only the server's secret checks them).
    algorithm: Annotated[str, msgspec.Meta(max_length=32, pattern="^[a-z0-9-]*$")] = "hmac-sha256"
    # The fingerprint of the public key that checks ``signature`` (Ed25519 only).
    key_id: Annotated[str, msgspec.Meta(max_length=48, pattern="^[a-z0-9:]*$")] | None = None


class AuditPublicKey(msgspec.Struct):
    """The tenant's Ed25519 public key: it checks checkpoints, export trailers and
    retention anchors without the server's secret (decision 0073)."""

    tenant_id: uuid.UUID
    algorithm: str
    key_id: str
    # Base64 of the raw 32-byte key (what ``tether audit verify-export --public-key``
    # takes), and the same key as PEM (SubjectPublicKeyInfo) for other tools.
    public_key: str
    public_key_pem: str


class AccessEventRead(msgspec.Struct):
    id: uuid.UUID
    at: datetime
    actor_key_id: uuid.UUID | None
    actor_role: str | None
    actor_subject: str | None
    purpose: str
    relationship_id: uuid.UUID | None
    global_user_id: uuid.UUID | None
    request_id: str | None
    memory_ids: list[uuid.UUID]
    sealed_seq: int | None


class AccessPage(msgspec.Struct):
    items: list[AccessEventRead]
    next_cursor: str | None


class AccessReportEntry(msgspec.Struct):
    """Accesses to one user's data, grouped by relationship, actor, action and decision."""

    relationship_id: uuid.UUID | None
    actor_role: str | None
    actor_key_id: uuid.UUID | None
    action: str
    object: str
    decision: str
    count: int
    first_at: datetime
    last_at: datetime
