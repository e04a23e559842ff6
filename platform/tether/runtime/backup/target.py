"""The database a restore writes into: refused when it holds data (unless forced),
emptied of the old schema, and given the roles the dump names."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from tether.core.settings import APP_ROLE
from tether.runtime.backup.manifest import table_names
from tether.runtime.preflight import StartupError

SYSTEM_ROLE = "tether_system"
# The schema as PostgreSQL 15+ creates it in a new database.
_WIPE = [
    "DROP SCHEMA IF EXISTS public CASCADE",
    "CREATE SCHEMA public AUTHORIZATION pg_database_owner",
    "GRANT USAGE ON SCHEMA public TO PUBLIC",
]
_ROLES = f"""
DO $$
DECLARE r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['{APP_ROLE}', '{SYSTEM_ROLE}'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
      IF (SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('CREATE ROLE %I NOLOGIN', r);
      ELSE
        RAISE EXCEPTION 'role % is missing: create it as docs/security.md says', r;
      END IF;
    END IF;
    IF NOT pg_has_role(current_user, r, 'MEMBER') THEN
      EXECUTE format('GRANT %I TO %I', r, current_user);
    END IF;
  END LOOP;
END $$
"""  # noqa: S608 - constant role names


async def tables_with_rows(conn: AsyncConnection) -> list[str]:
    """The tables holding rows (the migration bookkeeping aside)."""
    found = []
    for table in await table_names(conn):
        if table == "alembic_version":
            continue
        # The name comes from the catalog, quoted by Postgres itself.
        if await conn.scalar(text(f"SELECT EXISTS (SELECT 1 FROM {table})")):  # noqa: S608
            found.append(table)
    return found


async def prepare(conn: AsyncConnection, *, force: bool) -> list[str]:
    """Empty the target (refusing one that holds rows, unless ``force``) and create the
    roles; return the tables that held rows."""
    holding = await tables_with_rows(conn)
    if holding and not force:
        shown = ", ".join(holding[:5]) + (" …" if len(holding) > 5 else "")
        raise StartupError(
            f"the database holds data ({len(holding)} tables with rows: {shown})",
            "restore into an empty database, or pass --force to replace everything in it",
        )
    if await table_names(conn):
        for statement in _WIPE:
            await conn.execute(text(statement))
    await conn.execute(text(_ROLES))
    return holding
