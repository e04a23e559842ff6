"""Run Alembic migrations programmatically (``tether migrate``, start-up, tests)."""

from __future__ import annotations

import asyncio
import io
from functools import lru_cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tether.core.database import async_url
from tether.core.partitions import is_partition

# platform/tether/core/migrations.py -> the repository root
REPO_ROOT = Path(__file__).resolve().parents[3]


def include_object(_: object, name: str | None, kind: str, reflected: bool, __: object) -> bool:
    """What Alembic compares: partitions are made by their parent's migration, not models."""
    return not (kind == "table" and reflected and name is not None and is_partition(name))


def alembic_config(database_url: str) -> Config:
    """An Alembic config bound to one database, independent of the working directory."""
    config = Config(str(REPO_ROOT / "alembic.ini"), stdout=io.StringIO())
    config.set_main_option("script_location", str(REPO_ROOT / "migrations"))
    config.attributes["database_url"] = database_url
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    """Bring the schema up to ``revision``. Call from synchronous code only."""
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str) -> None:
    """Take the schema down to ``revision`` (``base`` removes everything)."""
    command.downgrade(alembic_config(database_url), revision)


@lru_cache(maxsize=1)
def head_revision() -> str:
    """The newest revision this code base ships."""
    head = ScriptDirectory.from_config(alembic_config("postgresql://unused")).get_current_head()
    if head is None:
        raise RuntimeError("no migrations found")
    return head


@lru_cache(maxsize=1)
def _known_revisions() -> frozenset[str]:
    scripts = ScriptDirectory.from_config(alembic_config("postgresql://unused"))
    return frozenset(script.revision for script in scripts.walk_revisions())


def is_newer_than_head(revision: str) -> bool:
    """Whether ``revision`` is one a later release wrote: unknown to this code base and
    numbered after its head. During a rolling upgrade the new release's migration Job
    runs first, and expand/contract (decision 0062) keeps this release working on it."""
    if revision in _known_revisions():
        return False
    head = head_revision()
    return revision.isdigit() and head.isdigit() and int(revision) > int(head)


async def current_async(database_url: str) -> str | None:
    """The revision the database is at (None before the first migration)."""
    engine = create_async_engine(async_url(database_url))
    try:
        async with engine.connect() as conn:
            if await conn.scalar(text("SELECT to_regclass('alembic_version')")) is None:
                return None
            value = await conn.scalar(text("SELECT version_num FROM alembic_version"))
    finally:
        await engine.dispose()
    return None if value is None else str(value)


def current(database_url: str) -> str | None:
    """Synchronous form of :func:`current_async`, for the CLI."""
    return asyncio.run(current_async(database_url))
