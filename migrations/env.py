"""Alembic environment: runs migrations over the async engine from Tether's settings."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from tether.core.database import async_url
from tether.core.migrations import include_object
from tether.core.settings import Settings
from tether.schema import metadata

config = context.config


def _database_url() -> str:
    explicit = config.attributes.get("database_url")
    if isinstance(explicit, str):
        return explicit
    return Settings().require_owner_url()


# A session-level advisory lock: one migrator at a time (the chart's hook Job, a retry of
# it, an operator's `tether migrate` during an upgrade). The next one waits, then finds
# the schema at head. Session-level, so commits inside a migration keep it.
MIGRATION_LOCK = 0x7465746865720001


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        compare_type=True,
        include_object=include_object,
    )
    connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK})
    connection.commit()  # Alembic then opens its own transaction
    try:
        with context.begin_transaction():
            context.run_migrations()
    finally:
        connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK})
        connection.commit()


async def _run_online() -> None:
    engine = create_async_engine(async_url(_database_url()), poolclass=NullPool)
    async with engine.connect() as connection:
        await connection.run_sync(_run)
    await engine.dispose()


if context.is_offline_mode():
    context.configure(url=_database_url(), target_metadata=metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    asyncio.run(_run_online())
