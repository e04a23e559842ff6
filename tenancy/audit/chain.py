"""The hash of an audit event: over the previous hash and a canonical JSON of every field
of the event, so changing, removing or reordering any row breaks the chain. From the
tenant's keyed epoch on (``audit_chain_heads.keyed_from``) it is an HMAC-SHA256 under
the tenant's chain key (decision 0043); rows before it keep their plain SHA-256."""

from __future__ import annotations

import hashlib
import hmac
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


def canonical(fields: dict[str, Any]) -> str:
    return json.dumps(
        {k: _plain(v) for k, v in sorted(fields.items())},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=_plain,
    )


def event_hash(prev_hash: str, fields: dict[str, Any], key: bytes | None = None) -> str:
    message = f"{prev_hash}\n{canonical(fields)}".encode()
    if key is None:
        return hashlib.sha256(message).hexdigest()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


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
