"""Migrations run on a real database, both ways, and match the models."""

import asyncio

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.ext.asyncio import create_async_engine

from tether.core.database import async_url
from tether.core.settings import Settings
from tether.runtime import migrate
from tether.schema import metadata

pytestmark = pytest.mark.integration


def _schema_diff(url: str) -> list[object]:
    async def diff() -> list[object]:
        engine = create_async_engine(async_url(url))
        async with engine.connect() as conn:
            result = await conn.run_sync(
                lambda sync: compare_metadata(
                    MigrationContext.configure(
                        sync, opts={"include_object": migrate.include_object}
                    ),
                    metadata,
                )
            )
        await engine.dispose()
        return list(result)

    return asyncio.run(diff())


def test_upgrade_downgrade_upgrade_round_trip(settings: Settings) -> None:
    url = settings.require_database_url()
    assert migrate.current(url) == migrate.head_revision()
    migrate.downgrade(url, "base")
    assert migrate.current(url) is None
    migrate.upgrade(url)
    assert migrate.current(url) == migrate.head_revision()


def test_models_and_migrations_agree(settings: Settings) -> None:
    # The equivalent of `alembic check`: autogenerate would produce nothing.
    assert _schema_diff(settings.require_database_url()) == []
