"""The hash of an audit event: SHA-256 over the previous hash and a canonical JSON of
every field of the event, so changing, removing or reordering any row breaks the chain."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import datetime
from typing import Any

GENESIS = "0" * 64


def _plain(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def event_hash(prev_hash: str, fields: dict[str, Any]) -> str:
    canonical = json.dumps(
        {k: _plain(v) for k, v in sorted(fields.items())},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=_plain,
    )
    return hashlib.sha256(f"{prev_hash}\n{canonical}".encode()).hexdigest()


HASHED_FIELDS = (
    "id",
    "tenant_id",
    "seq",
    "at",
    "actor_key_id",
    "actor_role",
    "actor_subject",
    "action",
    "object",
    "decision",
    "matched_rule",
    "relationship_id",
    "global_user_id",
    "request_id",
    "detail",
)
