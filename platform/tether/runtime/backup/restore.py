"""``tether restore``: check the backup, refuse a database that holds data (unless
forced), pg_restore in one transaction, then prove the result: counts and audit
chain heads as the manifest says, every tenant's audit chain verifying."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from tenancy.audit.services import AuditService
from tether.core import migrations
from tether.core.database import async_url, create_engine, create_session_factory
from tether.core.ids import TenantId
from tether.core.settings import Settings
from tether.core.tenant_sessions import tenant_session
from tether.runtime.backup.dump import sha256
from tether.runtime.backup.files_in import copy_in, plan, read_index
from tether.runtime.backup.manifest import (
    Manifest,
    differences,
    read_manifest,
    read_state,
    require_full_view,
    server_major,
)
from tether.runtime.backup.progress import Bar, run_tool
from tether.runtime.backup.target import prepare
from tether.runtime.backup.tools import PgTools, find_tools, libpq_url
from tether.runtime.preflight import StartupError

_RESTORED = ("pg_restore: processing data for table", "pg_restore: creating ")


@dataclass(slots=True)
class RestoreReport:
    manifest: Manifest
    replaced_tables: int = 0
    problems: list[str] = field(default_factory=list)
    audit_events_verified: int = 0
    files_restored: int = 0
    files_already_there: int = 0


def check_backup(directory: Path) -> Manifest:
    """The manifest of a complete, unaltered backup this release can restore."""
    manifest = read_manifest(directory)
    dump = directory / manifest.dump_file
    if not dump.is_file() or dump.stat().st_size != manifest.dump_bytes:
        raise StartupError(f"{dump} is missing or truncated", "restore a complete backup")
    if sha256(dump) != manifest.dump_sha256:
        raise StartupError(f"{dump} does not match its manifest's checksum", "restore another")
    head = manifest.state.migrations_head
    try:
        known = head is not None and ScriptDirectory.from_config(
            migrations.alembic_config("postgresql://unused")
        ).get_revision(head)
    except CommandError:
        known = False
    if not known:
        raise StartupError(
            f"the backup's schema ({head}) is not a migration this release knows",
            f"restore it with Tether {manifest.tether_version}, which wrote it",
        )
    return manifest


def _entries(tools: PgTools, dump: Path) -> int:
    listed = subprocess.run(  # noqa: S603 - pg_restore we located, on a file we checked
        [str(tools.pg_restore), "--list", str(dump)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    return sum(1 for line in listed.splitlines() if line and not line.startswith(";"))


async def _load(
    owner_url: str, dump: Path, report: RestoreReport, *, force: bool, pg_bin: Path | None
) -> None:
    engine = create_async_engine(async_url(owner_url), poolclass=NullPool)
    try:
        async with engine.connect() as conn:
            auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await require_full_view(auto)
            tools = find_tools(await server_major(auto), pg_bin)
            report.replaced_tables = len(await prepare(auto, force=force))
        bar = Bar("objects restored", _entries(tools, dump))
        bar.show()
        # One transaction: a restore that fails leaves the (emptied) database empty.
        command = [str(tools.pg_restore), "--verbose", "--exit-on-error", "--single-transaction"]
        command += [f"--dbname={libpq_url(owner_url)}", str(dump)]
        await run_tool(
            command,
            bar,
            lambda line: line.startswith(_RESTORED),
            "pg_restore",
        )
        bar.finish()
        async with engine.connect() as conn:
            auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
            # pg_restore leaves the planner without statistics: the hot path's plans
            # would be guesses until autovacuum got round to every table.
            await auto.execute(text("ANALYZE"))
            report.problems += differences(report.manifest.state, await read_state(auto))
    finally:
        await engine.dispose()


async def verify_audit(settings: Settings, tenants: list[str], report: RestoreReport) -> None:
    """Recompute every tenant's audit chain, as the service's login sees it."""
    engine = create_engine(settings)
    sessions = create_session_factory(engine)
    bar = Bar("audit chains verified", len(tenants))
    bar.show()
    try:
        for tenant in tenants:
            tenant_id = TenantId(uuid.UUID(tenant))
            async with tenant_session(sessions, tenant_id) as session:
                verdict = await AuditService(session, tenant_id).verify()
            report.audit_events_verified += verdict.checked
            if not verdict.ok:
                report.problems.append(f"audit chain of tenant {tenant}: {verdict.reason}")
            bar.step()
    finally:
        await engine.dispose()
    bar.finish(f"{report.audit_events_verified} events")


def restore(
    settings: Settings, directory: Path, *, force: bool, pg_bin: Path | None = None
) -> RestoreReport:
    """Restore the backup in ``directory`` into the database of ``settings`` (owner
    URL for the load, the service's login for the checks), and its object-store files
    into the store ``settings.files`` configures."""
    manifest = check_backup(directory)
    report = RestoreReport(manifest)
    # The store is checked before the database is touched: a refusal changes nothing.
    entries = [] if manifest.files is None else read_index(directory, manifest.files)
    todo = asyncio.run(plan(settings.files, entries, force=force)) if entries else []
    owner_url = settings.require_owner_url()
    asyncio.run(
        _load(owner_url, directory / manifest.dump_file, report, force=force, pg_bin=pg_bin)
    )
    if todo:
        report.problems += asyncio.run(copy_in(settings.files, directory, entries, todo))
    report.files_restored, report.files_already_there = len(todo), len(entries) - len(todo)
    asyncio.run(verify_audit(settings, sorted(manifest.state.audit_heads), report))
    return report
