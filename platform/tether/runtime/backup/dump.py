"""``tether backup``: pg_dump in the snapshot the manifest's counts were taken in."""

from __future__ import annotations

import hashlib
import shutil
from datetime import UTC, datetime
from pathlib import Path

import msgspec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine
from sqlalchemy.pool import NullPool

import tether
from tether.core.database import async_url
from tether.core.settings import FilesSettings
from tether.runtime.backup.files_out import Named, copy_out, named_objects
from tether.runtime.backup.manifest import (
    CONSISTENCY,
    DUMP_FILE,
    FORMAT,
    MANIFEST_FILE,
    Manifest,
    read_state,
    require_full_view,
    server_major,
    write_manifest,
)
from tether.runtime.backup.progress import Bar, run_tool
from tether.runtime.backup.tools import find_tools, libpq_url
from tether.runtime.preflight import StartupError

_LEAF_TABLES = """
SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg_%'
"""
_CHUNK = 1 << 20


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _prepare(directory: Path) -> None:
    if directory.exists() and any(directory.iterdir()):
        raise StartupError(f"{directory} is not empty", "name a new directory for each backup")
    directory.mkdir(parents=True, exist_ok=True)


async def _dump(
    conn: AsyncConnection, url: str, directory: Path, pg_bin: Path | None
) -> tuple[Manifest, list[Named]]:
    await require_full_view(conn)
    tools = find_tools(await server_major(conn), pg_bin)
    version = str(await conn.scalar(text("SHOW server_version")))
    # Exported first: pg_dump reads in this very snapshot, which stays open (and so
    # valid) until this transaction ends after pg_dump has finished.
    snapshot = str(await conn.scalar(text("SELECT pg_export_snapshot()")))
    state = await read_state(conn)
    named = await named_objects(conn)
    bar = Bar("tables dumped", int(await conn.scalar(text(_LEAF_TABLES))))
    bar.show()
    partial = directory / f"{DUMP_FILE}.partial"
    command = [str(tools.pg_dump), "--format=custom", "--verbose", f"--snapshot={snapshot}"]
    command += [f"--file={partial}", f"--dbname={libpq_url(url)}"]
    await run_tool(command, bar, lambda line: "dumping contents of table" in line, "pg_dump")
    dump = partial.rename(directory / DUMP_FILE)
    bar.finish(f"{dump.stat().st_size / 2**20:.1f} MB")
    manifest = Manifest(
        format=FORMAT,
        tether_version=tether.__version__,
        created_at=datetime.now(UTC),
        server_version=version,
        pg_dump_version=tools.major,
        consistency=CONSISTENCY,
        state=state,
        dump_file=DUMP_FILE,
        dump_bytes=dump.stat().st_size,
        dump_sha256=sha256(dump),
    )
    return manifest, named


async def backup(
    owner_url: str, directory: Path, pg_bin: Path | None = None, files: FilesSettings | None = None
) -> Manifest:
    """Dump the database at ``owner_url`` (a login that sees every row) into
    ``directory``, then copy the object-store files its documents name (from the store
    ``files`` configures), with the manifest written last: a directory without one is an
    unfinished backup."""
    _prepare(directory)
    engine = create_async_engine(async_url(owner_url), poolclass=NullPool)
    try:
        async with engine.connect() as conn:
            snapshot_conn = await conn.execution_options(isolation_level="REPEATABLE READ")
            async with snapshot_conn.begin():
                manifest, named = await _dump(snapshot_conn, owner_url, directory, pg_bin)
    finally:
        await engine.dispose()
    if named:  # after the snapshot's transaction: a long copy holds back no vacuum
        part = await copy_out(files or FilesSettings(), named, directory)
        manifest = msgspec.structs.replace(manifest, files=part)
    write_manifest(directory, manifest)
    return manifest


def dated(parent: Path) -> Path:
    """A new backup's directory under ``parent``, named by the time (names sort as time)."""
    return parent / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def prune(parent: Path, keep: int) -> list[Path]:
    """Remove all but the newest ``keep`` complete backups under ``parent``, and every
    unfinished one (no manifest: a run that failed); the directories removed."""
    dated_dirs = sorted(d for d in parent.iterdir() if d.is_dir() and d.name[:1].isdigit())
    complete = [d for d in dated_dirs if (d / MANIFEST_FILE).is_file()]
    unfinished = [d for d in dated_dirs if d not in complete]
    removed = complete[: max(len(complete) - keep, 0)] + unfinished
    for directory in removed:
        shutil.rmtree(directory)
    return removed
