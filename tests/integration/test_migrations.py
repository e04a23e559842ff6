"""Migrations run on a real database, both ways, and match the models."""

import asyncio

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.support import load_migration
from tether.core import migrations
from tether.core.database import async_url
from tether.core.settings import Settings
from tether.recall.models import TOKENS_ARE_WORDS
from tether.schema import metadata

pytestmark = pytest.mark.integration


def _schema_diff(url: str) -> list[object]:
    async def diff() -> list[object]:
        engine = create_async_engine(async_url(url))
        async with engine.connect() as conn:
            result = await conn.run_sync(
                lambda sync: compare_metadata(
                    MigrationContext.configure(
                        sync, opts={"include_object": migrations.include_object}
                    ),
                    metadata,
                )
            )
        await engine.dispose()
        return list(result)

    return asyncio.run(diff())


def test_upgrade_downgrade_upgrade_round_trip(settings: Settings) -> None:
    url = settings.require_owner_url()
    assert migrations.current(url) == migrations.head_revision()
    migrations.downgrade(url, "base")
    assert migrations.current(url) is None
    migrations.upgrade(url)
    assert migrations.current(url) == migrations.head_revision()


def test_models_and_migrations_agree(settings: Settings) -> None:
    # The equivalent of `alembic check`: autogenerate would produce nothing.
    assert _schema_diff(settings.require_owner_url()) == []


def _snapshot_objects(url: str) -> tuple[str | None, int]:
    """The persistence of ``recall_snapshots`` (None: no such table) and how many
    triggers ``memories`` has for it."""

    async def read() -> tuple[str | None, int]:
        engine = create_async_engine(async_url(url))
        async with engine.connect() as conn:
            found = await conn.scalar(
                text("SELECT relpersistence::text FROM pg_class WHERE relname = 'recall_snapshots'")
            )
            triggers = await conn.scalar(
                text("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'recall_snapshots_on_%'")
            )
        await engine.dispose()
        return (None if found is None else str(found)), int(triggers or 0)

    return asyncio.run(read())


def test_partition_snapshots_are_gone_and_a_downgrade_brings_them_back(
    settings: Settings,
) -> None:
    """Migration 0019 (decision 0030) drops the snapshot table and the trigger on
    ``memories`` that kept it; its downgrade restores the unlogged table and trigger."""
    url = settings.require_owner_url()
    assert _snapshot_objects(url) == (None, 0)
    migrations.downgrade(url, "0018")
    try:
        assert _snapshot_objects(url) == ("u", 3)
    finally:
        migrations.upgrade(url)
    assert _snapshot_objects(url) == (None, 0)


def test_tokens_that_are_not_words_are_brought_to_the_form_every_reader_split_them_in(
    settings: Settings,
) -> None:
    """What migration 0010 does to rows written before its constraint: their tokens as
    every reader already split them, empty ones dropped; words stay as they are."""
    migration = load_migration("0010_tokens_are_words.py")
    assert migration.CONDITION == TOKENS_ARE_WORDS
    cases = [
        (["green tea", "cello"], ["green", "tea", "cello"], False),
        (["猫", "", None, "tea  pot"], ["猫", "tea", "pot"], False),
        ([""], [], False),
        (["z y x", "w"], ["z", "y", "x", "w"], False),
        ([["b a", "c"], ["d", ""]], ["b", "a", "c", "d"], False),
        ([], [], True),
        (["喜欢", "cat"], ["喜欢", "cat"], True),
    ]

    async def check() -> None:
        engine = create_async_engine(async_url(settings.require_owner_url()))
        async with engine.connect() as conn:
            for tokens, split, words in cases:
                found = (
                    await conn.execute(
                        text(
                            f"SELECT {migration.AS_SPLIT}, {migration.CONDITION} "  # noqa: S608 - constants
                            "FROM (SELECT CAST(:tokens AS text[]) AS tokens) AS memory"
                        ),
                        {"tokens": tokens},
                    )
                ).one()
                assert (found[0], found[1]) == (split, words), tokens
        await engine.dispose()

    asyncio.run(check())
