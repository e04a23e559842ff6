"""What a backup holds, read inside the snapshot it dumps: the schema's migration,
the rows of every table and the head of every tenant's audit chain. A restore reads
the same of the restored database and compares."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import msgspec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from tether.runtime.preflight import StartupError

FORMAT = 1
MANIFEST_FILE = "manifest.json"
DUMP_FILE = "database.dump"
# The object-store files of documents (S3 backend only): one file each, and their index.
FILES_DIR = "files"
INDEX_FILE = "files/index.jsonl"
CONSISTENCY = (
    "one snapshot: pg_dump read the database in the REPEATABLE READ snapshot these "
    "counts were taken in (pg_export_snapshot), while the system kept running"
)
# Tables (and partitioned parents, whose count includes their partitions) of the
# database's own schemas, named as Postgres quotes them.
_TABLES = """
SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_%'
ORDER BY 1
"""


class ChainHead(msgspec.Struct, frozen=True):
    seq: int
    hash: str


class DatabaseState(msgspec.Struct, frozen=True):
    migrations_head: str | None
    tables: dict[str, int]
    audit_heads: dict[str, ChainHead]


class FileEntry(msgspec.Struct, frozen=True, array_like=True):
    """One object of the store, in ``files/<position>`` (one line of the index)."""

    key: str
    bytes: int
    sha256: str


class FilesPart(msgspec.Struct, frozen=True):
    """The object-store files a backup carries: how many, how big, and the keys its
    documents named that the store did not have (``missing``) or held with other bytes
    than were uploaded (``damaged``) when the backup ran."""

    index_file: str
    count: int
    bytes: int
    index_sha256: str
    missing: list[str] = msgspec.field(default_factory=list)
    damaged: list[str] = msgspec.field(default_factory=list)


class Manifest(msgspec.Struct, frozen=True, omit_defaults=True):
    format: int
    tether_version: str
    created_at: datetime
    server_version: str
    pg_dump_version: int
    consistency: str
    state: DatabaseState
    dump_file: str
    dump_bytes: int
    dump_sha256: str
    # None: every document's bytes are in the dump (the Postgres backend).
    files: FilesPart | None = None


async def server_major(conn: AsyncConnection) -> int:
    return int(await conn.scalar(text("SHOW server_version_num"))) // 10000


async def require_full_view(conn: AsyncConnection) -> None:
    """Refuse a login held to row-level security: it would see no tenant's rows (the
    tables force it on their owner too), and the dump would be empty of them."""
    query = "SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user"
    if not await conn.scalar(text(query)):
        user = await conn.scalar(text("SELECT current_user"))
        raise StartupError(
            f"the login {user} is held to row-level security and would see no tenant's rows",
            "connect as a superuser or a role with BYPASSRLS through TETHER_DB__OWNER_URL "
            "(docs/backup.md)",
        )


async def _exists(conn: AsyncConnection, table: str) -> bool:
    return await conn.scalar(text("SELECT to_regclass(:t) IS NOT NULL"), {"t": table}) is True


async def table_names(conn: AsyncConnection) -> list[str]:
    return [str(name) for name in (await conn.scalars(text(_TABLES))).all()]


async def read_state(conn: AsyncConnection) -> DatabaseState:
    """The state of the database as ``conn``'s transaction sees it."""
    counts: dict[str, int] = {}
    for table in await table_names(conn):
        # The name comes from the catalog, quoted by Postgres itself.
        counts[table] = int(await conn.scalar(text(f"SELECT count(*) FROM {table}")))  # noqa: S608
    head = None
    if await _exists(conn, "alembic_version"):
        head = await conn.scalar(text("SELECT version_num FROM alembic_version"))
    heads: dict[str, ChainHead] = {}
    if await _exists(conn, "audit_chain_heads"):
        rows = await conn.execute(text("SELECT tenant_id::text, seq, hash FROM audit_chain_heads"))
        heads = {tenant: ChainHead(int(seq), str(h)) for tenant, seq, h in rows}
    return DatabaseState(None if head is None else str(head), counts, heads)


def differences(expected: DatabaseState, found: DatabaseState) -> list[str]:
    """What differs between the backed-up and the restored state, in words."""
    problems: list[str] = []
    if expected.migrations_head != found.migrations_head:
        problems.append(f"migration {found.migrations_head}, expected {expected.migrations_head}")
    for table in sorted(expected.tables.keys() | found.tables.keys()):
        want, got = expected.tables.get(table), found.tables.get(table)
        if want != got:
            problems.append(f"{table}: {got} rows, expected {want}")
    for tenant in sorted(expected.audit_heads.keys() | found.audit_heads.keys()):
        if expected.audit_heads.get(tenant) != found.audit_heads.get(tenant):
            problems.append(f"audit chain head of tenant {tenant} differs")
    return problems


def write_manifest(directory: Path, manifest: Manifest) -> None:
    path = directory / MANIFEST_FILE
    path.write_bytes(msgspec.json.format(msgspec.json.encode(manifest)) + b"\n")


def read_manifest(directory: Path) -> Manifest:
    path = directory / MANIFEST_FILE
    try:
        manifest = msgspec.json.decode(path.read_bytes(), type=Manifest)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise StartupError(
            f"{path} is not a Tether backup manifest ({exc})",
            "name the directory `tether backup` wrote",
        ) from exc
    if manifest.format != FORMAT:
        raise StartupError(
            f"the backup's format {manifest.format} is not {FORMAT}",
            "restore it with the Tether release that wrote it",
        )
    return manifest
