"""API shapes of the audit log."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

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
    reason: str | None = None
