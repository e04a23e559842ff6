"""The Merkle root of a batch of access events (decision 0042).

Each event is a leaf: an HMAC-SHA256, under the tenant's chain key, of its canonical
JSON; leaves are ordered by event id and hashed in pairs (an odd one is carried up) with
distinct prefixes for leaves and inner nodes, so no leaf can pose as a node. The root,
with the count and the first and last id, goes into one chained seal event: changing,
removing or adding an access event of a sealed batch changes its root.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from typing import Any

from tenancy.audit.chain import canonical

EMPTY_ROOT = "0" * 64
LEAF_FIELDS = (
    "id",
    "tenant_id",
    "at",
    "actor_key_id",
    "actor_role",
    "actor_subject",
    "purpose",
    "relationship_id",
    "global_user_id",
    "request_id",
    "memory_ids",
)


def leaf(key: bytes, fields: dict[str, Any]) -> bytes:
    return hmac.new(key, b"\x00" + canonical(fields).encode(), hashlib.sha256).digest()


def root(leaves: Sequence[bytes]) -> str:
    if not leaves:
        return EMPTY_ROOT
    level = list(leaves)
    while len(level) > 1:
        paired = [
            hashlib.sha256(b"\x01" + level[i] + level[i + 1]).digest()
            for i in range(0, len(level) - 1, 2)
        ]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0].hex()
