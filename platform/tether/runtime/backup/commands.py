"""The ``backup``, ``restore`` subcommands of ``tether`` (registered by tether.cli)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from tether.core import migrations
from tether.core.settings import Settings
from tether.runtime.backup.progress import Bar
from tether.runtime.preflight import DataDirLock, StartupError, ensure_writable_dir
from tether.runtime.services import backing_services


def _cmd_backup(settings: Settings, args: argparse.Namespace) -> int:
    from tether.runtime.backup.dump import backup, dated, prune

    if args.keep is not None and args.keep < 1:
        raise StartupError(f"--keep {args.keep} would remove the new backup", "keep 1 or more")
    directory = args.directory if args.keep is None else dated(args.directory)
    # A running `tether serve` on the same data dir is joined, not stopped: the dump
    # is one snapshot of the live system.
    with backing_services(settings, need_redis=False) as live:
        manifest = asyncio.run(backup(live.require_owner_url(), directory, args.pg_bin, live.files))
    state = manifest.state
    summary: dict[str, object] = {
        "backup": str(directory.resolve()),
        "migrations_head": state.migrations_head,
        "rows": sum(state.tables.values()),
        "tables": len(state.tables),
        "tenants": len(state.audit_heads),
        "bytes": manifest.dump_bytes,
    }
    if manifest.files is not None:
        summary["files"] = manifest.files.count
        summary["file_bytes"] = manifest.files.bytes
        summary["files_missing"] = manifest.files.missing
        summary["files_damaged"] = manifest.files.damaged
    if args.keep is not None:
        summary["removed"] = [str(d) for d in prune(args.directory, args.keep)]
    print(json.dumps(summary))  # noqa: T201
    return 0


async def _reindex(live: Settings) -> int:
    """Recompute vectors the configured embedding model did not make (none, when the
    backup came from a deployment with the same model)."""
    from tenancy.settings.cache import TenantSettingsCache
    from tether.core.resources import open_resources
    from tether.memories.reindex import Progress, reindex
    from tether.providers.configured import embedding_provider
    from tether.recall.services import warm_up
    from tether.recall.tenant_embedders import TenantEmbedders
    from tether.recall.versions import PartitionVersions

    embedder = embedding_provider(live)
    warm_up(live, embedder)
    bar = Bar("memories re-embedded", 0)

    def show(progress: Progress) -> None:
        bar.total, bar.done = progress.total, progress.done
        bar.show(f"{progress.rate:.0f}/s")

    try:
        async with open_resources(live) as resources:
            versions = PartitionVersions(resources.hot_redis, resources.redis, retry=False)
            # Tenants on a named embedding provider are re-embedded by theirs.
            cache = TenantSettingsCache(resources.sessions, 3600.0)
            embedders = TenantEmbedders(embedder, live.providers, cache)
            try:
                done = await reindex(
                    resources.sessions,
                    embedder,
                    versions.invalidate,
                    report=show,
                    embedders=embedders.for_tenant,
                )
            finally:
                await embedders.aclose()
    finally:
        await embedder.aclose()
    bar.finish()
    return done.done


def _restore(settings: Settings, args: argparse.Namespace) -> int:
    from tether.runtime.backup.caches import reset_redis
    from tether.runtime.backup.restore import restore

    with backing_services(settings) as live:
        report = restore(live, args.directory, force=args.force, pg_bin=args.pg_bin)
        removed = asyncio.run(reset_redis(live, flush=args.flush_redis))
        summary: dict[str, object] = {
            "restored": str(args.directory.resolve()),
            "migrations_head": report.manifest.state.migrations_head,
            "replaced_tables": report.replaced_tables,
            "audit_events_verified": report.audit_events_verified,
            "redis_keys_cleared": "all" if removed < 0 else removed,
            "verified": not report.problems,
            "problems": report.problems,
        }
        if report.manifest.files is not None:
            summary["files_restored"] = report.files_restored
            summary["files_already_there"] = report.files_already_there
            # Named by documents, but not in the store when the backup ran.
            summary["files_missing_in_backup"] = report.manifest.files.missing
        if report.problems:
            print(json.dumps(summary, indent=2))  # noqa: T201
            return 1
        if report.manifest.state.migrations_head != migrations.head_revision():
            migrations.upgrade(live.require_owner_url())
            summary["migrated_to"] = migrations.head_revision()
        if not args.no_reindex:
            summary["reindexed"] = asyncio.run(_reindex(live))
    print(json.dumps(summary, indent=2))  # noqa: T201
    return 0


def _cmd_restore(settings: Settings, args: argparse.Namespace) -> int:
    # The embedded service must not run meanwhile: its processes hold copies of what
    # the restore replaces (an external deployment is scaled to zero: docs/backup.md).
    lock = DataDirLock(ensure_writable_dir(settings.data_dir)) if settings.is_embedded else None
    if lock is not None:
        lock.acquire()
    try:
        return _restore(settings, args)
    finally:
        if lock is not None:
            lock.release()


def _pg_bin(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pg-bin",
        type=Path,
        default=None,
        metavar="DIR",
        help="where pg_dump/pg_restore are (default: the embedded server's, else PATH)",
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``backup`` and ``restore`` to the ``tether`` parser."""
    made = sub.add_parser(
        "backup",
        help="dump the database (one consistent snapshot, also of a running system) and "
        "copy the object-store files its documents name, with a manifest of its counts and "
        "audit chain heads, into a new directory",
    )
    made.add_argument(
        "directory", type=Path, help="a new or empty directory (with --keep: their parent)"
    )
    made.add_argument(
        "--keep",
        type=int,
        default=None,
        metavar="N",
        help="write into a new directory named by the time under DIRECTORY, then remove "
        "all but the newest N backups there (scheduled backups)",
    )
    _pg_bin(made)
    made.set_defaults(handler=_cmd_backup)
    back = sub.add_parser(
        "restore",
        help="restore a backup into an empty database (and its uploaded files into the "
        "configured object store), verify counts and audit chains, clear Redis caches and "
        "re-embed what the configured model did not make",
    )
    back.add_argument("directory", type=Path, help="a directory `tether backup` wrote")
    back.add_argument(
        "--force",
        action="store_true",
        help="replace a database that holds data, and other bytes at the store's keys",
    )
    back.add_argument(
        "--flush-redis",
        action="store_true",
        help="also drop working memory, claims and queued tasks (restoring an older state)",
    )
    back.add_argument("--no-reindex", action="store_true", help="skip the re-embedding step")
    _pg_bin(back)
    back.set_defaults(handler=_cmd_restore)
