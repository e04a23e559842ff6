"""Merkle roots of access-event batches and keyed chain links (decisions 0042, 0043)."""

from __future__ import annotations

import hashlib

from tenancy.audit.chain import event_hash
from tenancy.audit.merkle import EMPTY_ROOT, leaf, root

KEY = b"k" * 32


def _leaves(n: int) -> list[bytes]:
    return [leaf(KEY, {"id": str(i), "purpose": "context", "memory_ids": []}) for i in range(n)]


def test_every_leaf_changes_the_root_and_order_matters() -> None:
    base = _leaves(7)
    whole = root(base)
    for i in range(7):
        changed = list(base)
        changed[i] = leaf(KEY, {"id": str(i), "purpose": "search", "memory_ids": []})
        assert root(changed) != whole
    assert root(base[:-1]) != whole  # a removed event
    assert root([base[1], base[0], *base[2:]]) != whole
    assert root([]) == EMPTY_ROOT


def test_inner_nodes_and_leaves_are_hashed_apart() -> None:
    a, b = _leaves(2)
    # Nodes are SHA-256 of 0x01 + children; leaves are keyed MACs of 0x00 + the event.
    assert root([a, b]) == hashlib.sha256(b"\x01" + a + b).hexdigest()
    assert root([a]) == a.hex()


def test_keyed_links_differ_from_plain_ones_and_by_key() -> None:
    fields = {"seq": 1, "action": "key.issue", "detail": {"名": "值"}}
    plain = event_hash("0" * 64, fields)
    keyed = event_hash("0" * 64, fields, KEY)
    assert plain != keyed
    assert keyed != event_hash("0" * 64, fields, b"x" * 32)
    assert plain == event_hash("0" * 64, fields)
