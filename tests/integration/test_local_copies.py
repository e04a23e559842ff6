"""This process's partition copies are bounded by count and by their estimated bytes:
the least recently used go first, and a partition larger than the byte bound alone is
not kept (real partitions, read from Postgres)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tenancy.ids import RelationshipId, RelationshipScope
from tests.support import resolve_body
from tether.core.ids import TenantId
from tether.core.resources import Resources
from tether.core.settings import Settings
from tether.core.tenant_sessions import tenant_session
from tether.recall.cold import ColdReader
from tether.recall.local import Key, LocalCopies, footprint
from tether.recall.partition import Partition
from tether.recall.weights import rank_weights

pytestmark = pytest.mark.integration

TEXTS = ["The user plays the cello", "用户每周六去爬山", "The user's sister lives in Lyon"]


async def _partitions(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources, count: int
) -> list[tuple[Key, Partition]]:
    """``count`` relationships of three memories each, read from Postgres."""
    tenant = await make_tenant()
    headers = await tenant.key("gateway")
    reader = ColdReader(rank_weights(settings), None)
    found = []
    for n in range(count):
        resolved = await client.post(
            "/v1/resolve", json=resolve_body(f"copies-{n}"), headers=headers
        )
        rid = uuid.UUID(resolved.json()["relationship_id"])
        body = {"memories": [{"content": f"{text} {n}"} for text in TEXTS]}
        created = await client.post(
            f"/v1/relationships/{rid}/memories/batch", json=body, headers=headers
        )
        assert created.status_code == 200, created.text
        scope = RelationshipScope(TenantId(tenant.id), RelationshipId(rid))
        async with tenant_session(resources.sessions, TenantId(tenant.id)) as session:
            partition = await reader.whole(session, scope, "v")
        found.append(((scope.tenant_id, scope.relationship_id), partition))
    return found


async def test_copies_are_bounded_by_bytes_and_by_count(
    settings: Settings, client: Any, make_tenant: Any, resources: Resources
) -> None:
    (a, first), (b, second), (c, third) = await _partitions(
        settings, client, make_tenant, resources, 3
    )
    sizes = [footprint(p) for p in (first, second, third)]
    assert all(size > 3 * 1000 for size in sizes)  # three memories, arrays included

    by_bytes = LocalCopies(capacity=10, max_bytes=sizes[0] + sizes[1] + sizes[2] - 1)
    by_bytes.put(a, first)
    by_bytes.put(b, second)
    assert by_bytes.get(a, 600) is not None  # now the most recently used
    by_bytes.put(c, third)  # over the bound: the least recently used (b) goes
    assert by_bytes.get(b, 600) is None
    assert by_bytes.get(a, 600) is not None
    assert by_bytes.get(c, 600) is not None
    assert by_bytes.bytes == sizes[0] + sizes[2]
    by_bytes.drop(a)
    assert by_bytes.bytes == sizes[2]
    by_bytes.clear()
    assert (len(by_bytes), by_bytes.bytes) == (0, 0)

    by_count = LocalCopies(capacity=2, max_bytes=0)
    for key, partition in ((a, first), (b, second), (c, third)):
        by_count.put(key, partition)
    assert by_count.get(a, 600) is None
    assert len(by_count) == 2

    too_small = LocalCopies(capacity=10, max_bytes=sizes[0] - 1)
    too_small.put(a, first)
    assert (len(too_small), too_small.bytes) == (0, 0)

    expired = LocalCopies(capacity=10, max_bytes=0)
    expired.put(a, first)
    assert expired.get(a, -1) is None  # older than the maximum age: dropped
    assert expired.bytes == 0
