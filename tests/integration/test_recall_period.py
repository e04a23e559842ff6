"""A search that names a period ranks the memories of that period first, in English and
Chinese, cold and hot alike (decision 0091)."""

from __future__ import annotations

import pytest

from tests.integration.test_memory_extraction import _relationship

pytestmark = [pytest.mark.integration]

MEMORIES = [
    ("march-en", "We went camping by the lake", "2023-03-10T12:00:00Z"),
    ("may-en", "We went camping in the mountains", "2023-05-20T12:00:00Z"),
    ("march-zh", "我们去湖边露营了", "2023-03-10T12:00:00Z"),
    ("may-zh", "我们去山里露营了", "2023-05-20T12:00:00Z"),
]


@pytest.fixture(scope="module")
async def gateway(make_tenant):  # type: ignore[no-untyped-def]
    tenant = await make_tenant()
    return tenant, await tenant.key("gateway")


@pytest.mark.parametrize(
    ("query", "expected", "other"),
    [
        ("Where did we go camping in May 2023?", "may-en", "march-en"),
        ("我们2023年5月去哪露营了？", "may-zh", "march-zh"),
        ("Where did we go camping in March 2023?", "march-en", "may-en"),
    ],
)
async def test_a_named_period_ranks_its_memories_first(
    client, gateway, query: str, expected: str, other: str
) -> None:
    _, headers = gateway
    rid = await _relationship(client, headers, f"period-{expected}-{len(query)}")
    body = {
        "memories": [
            {"content": text, "external_id": key, "occurred_at": at, "memory_type": "event"}
            for key, text, at in MEMORIES
        ]
    }
    made = await client.post(f"/v1/relationships/{rid}/memories/batch", json=body, headers=headers)
    assert made.status_code == 200, made.text
    for _ in range(2):  # the first search reads cold, the next one a hot copy
        response = await client.post(
            f"/v1/relationships/{rid}/search", json={"query": query, "k": 4}, headers=headers
        )
        assert response.status_code == 200, response.text
        result = response.json()
        items = {hit["external_id"]: hit for hit in result["items"]}
        assert result["items"][0]["external_id"] == expected, result["items"]
        assert result["items"][0]["explanation"]["period"] == 2.0
        assert items[other]["explanation"]["period"] == 1.0
