"""/ready while a rolling upgrade runs (decision 0062, issue 37): the new release's
migration Job moves the schema ahead of the running pods' code first. Those pods must
stay ready (expand/contract keeps them working), or every one of them leaves its
Service before a single new pod is ready. A schema behind the code is not ready."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tether.core import migrations
from tether.core.migration_policy import POLICY_SINCE

pytestmark = pytest.mark.integration


@pytest.fixture
async def schema_at(superuser: AsyncEngine) -> AsyncIterator[AsyncEngine]:
    """Lets a test set the recorded revision; puts the head back afterwards."""
    yield superuser
    async with superuser.begin() as conn:
        await conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": _head()})


def _head() -> str:
    return migrations.head_revision()


async def _record(engine: AsyncEngine, revision: str) -> None:
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": revision})


async def test_a_schema_ahead_of_the_code_is_ready(
    client: httpx.AsyncClient, schema_at: AsyncEngine
) -> None:
    later = f"{int(_head()) + 1:04d}"
    await _record(schema_at, later)
    response = await client.get("/ready")
    assert response.status_code == 200, response.text
    detail = response.json()["components"]["migrations"]["detail"]
    assert f"schema at {later}, ahead of" in detail


async def test_a_schema_behind_the_code_is_not_ready(
    client: httpx.AsyncClient, schema_at: AsyncEngine
) -> None:
    await _record(schema_at, POLICY_SINCE)
    response = await client.get("/ready")
    assert response.status_code == 503, response.text
    detail = response.json()["components"]["migrations"]["detail"]
    assert f"schema at {POLICY_SINCE}, code expects {_head()}" in detail
