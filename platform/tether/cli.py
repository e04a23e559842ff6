"""The ``tether`` command line: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

from tether.core.logging import configure_logging
from tether.core.settings import Settings
from tether.runtime.backup.commands import register as register_backup
from tether.runtime.preflight import StartupError, ensure_writable_dir


def _cmd_serve(settings: Settings, _: argparse.Namespace) -> int:
    from tether.runtime.serve import serve

    serve(settings)
    return 0


def _cmd_api(settings: Settings, _: argparse.Namespace) -> int:
    from tether.runtime.api_server import serve_api

    if settings.is_embedded:
        raise StartupError(
            "`tether api` needs TETHER_DATABASE_URL and TETHER_REDIS_URL",
            "set both, or use `tether serve`, which starts embedded ones",
        )
    serve_api(settings)
    return 0


def _cmd_worker(settings: Settings, args: argparse.Namespace) -> int:
    from tether.runtime.serve import worker_command

    if settings.is_embedded:
        raise StartupError(
            "`tether worker` needs TETHER_DATABASE_URL and TETHER_REDIS_URL",
            "set both, or use `tether serve`, which runs its own worker in embedded mode",
        )
    command = worker_command(settings, with_beat=args.beat)
    os.execv(sys.executable, command)  # noqa: S606 - replace this process with Celery


def _cmd_migrate(settings: Settings, args: argparse.Namespace) -> int:
    from tether.core import migrations
    from tether.runtime.services import backing_services

    if args.check:
        return _migrate_check(settings)
    if args.action is None:
        raise StartupError("`tether migrate` needs an action", "say upgrade, downgrade, current")
    with backing_services(settings, need_redis=False) as live:
        url = live.require_owner_url()
        if args.action == "upgrade":
            migrations.upgrade(url, args.revision or "head")
        elif args.action == "downgrade":
            migrations.downgrade(url, args.revision or "-1")
        print(json.dumps({"current": migrations.current(url), "head": migrations.head_revision()}))  # noqa: T201
    return 0


def _migrate_check(settings: Settings) -> int:
    from dataclasses import asdict

    from alembic.script import ScriptDirectory

    from tether.core import migrations
    from tether.core.migration_policy import check
    from tether.runtime.services import backing_services

    with backing_services(settings, need_redis=False) as live:
        url = live.require_database_url()
        scripts = ScriptDirectory.from_config(migrations.alembic_config(url))
        report = check(scripts, migrations.current(url))
    shown = asdict(report) | {"ok": report.ok}
    print(json.dumps(shown, indent=2))  # noqa: T201
    return 0 if report.ok else 3


def _cmd_tenant_create(settings: Settings, args: argparse.Namespace) -> int:
    from tenancy.access.services import TenantService
    from tether.core import migrations
    from tether.core.database import create_engine, create_session_factory
    from tether.core.ids import TenantId, new_id
    from tether.core.tenant_sessions import tenant_transaction
    from tether.runtime.services import backing_services

    async def create(url_settings: Settings) -> dict[str, str]:
        engine = create_engine(url_settings)
        # Row-level security admits the new tenant's rows once the session names it.
        tenant_id = TenantId(new_id())
        try:
            async with tenant_transaction(create_session_factory(engine), tenant_id) as session:
                created = await TenantService(session).create(args.name, args.region, tenant_id)
        finally:
            await engine.dispose()
        return {
            "tenant_id": str(created.tenant_id),
            "name": created.name,
            "region": created.region,
            "admin_key_id": str(created.admin_key_id),
            "admin_token": created.admin_token,
        }

    with backing_services(settings, need_redis=False) as live:
        migrations.upgrade(live.require_owner_url())
        print(json.dumps(asyncio.run(create(live)), indent=2))  # noqa: T201
    return 0


def _cmd_tenant_limits(settings: Settings, args: argparse.Namespace) -> int:
    from tether.runtime.services import backing_services
    from tether.runtime.tenant_limits import show_or_allow

    with backing_services(settings, need_redis=False) as live:
        print(json.dumps(show_or_allow(live, args.name, args.allow), indent=2))  # noqa: T201
    return 0


def _cmd_tenant_list(settings: Settings, _: argparse.Namespace) -> int:
    from tether.runtime.services import backing_services
    from tether.runtime.tenant_admin import list_tenants

    with backing_services(settings, need_redis=False) as live:
        print(json.dumps(list_tenants(live), indent=2))  # noqa: T201
    return 0


def _cmd_tenant_disable(settings: Settings, args: argparse.Namespace) -> int:
    from tether.runtime.services import backing_services
    from tether.runtime.tenant_admin import set_disabled

    with backing_services(settings, need_redis=False) as live:
        disabled = args.tenant_command == "disable"
        print(json.dumps(set_disabled(live, args.name, disabled), indent=2))  # noqa: T201
    return 0


def _cmd_tenant_admin_key(settings: Settings, args: argparse.Namespace) -> int:
    from tether.runtime.services import backing_services
    from tether.runtime.tenant_admin import issue_admin_key

    with backing_services(settings, need_redis=False) as live:
        print(json.dumps(issue_admin_key(live, args.name), indent=2))  # noqa: T201
    return 0


def _cmd_tenant_settings(settings: Settings, args: argparse.Namespace) -> int:
    from tether.runtime.services import backing_services
    from tether.runtime.tenant_admin import tenant_settings

    document: bytes | None = None
    if args.set == "-":
        document = sys.stdin.buffer.read()
    elif args.set is not None:
        try:
            with open(args.set, "rb") as file:
                document = file.read()
        except OSError as exc:
            raise StartupError(f"cannot read {args.set}: {exc}", "name a JSON file") from exc
    with backing_services(settings, need_redis=False) as live:
        print(json.dumps(tenant_settings(live, args.name, document), indent=2))  # noqa: T201
    return 0


def _cmd_reindex(settings: Settings, args: argparse.Namespace) -> int:
    from tenancy.settings.cache import TenantSettingsCache
    from tether.core.resources import open_resources
    from tether.memories.reindex import Progress, reindex
    from tether.providers.configured import embedding_provider
    from tether.recall.services import warm_up
    from tether.recall.tenant_embedders import TenantEmbedders
    from tether.recall.versions import PartitionVersions
    from tether.runtime.services import backing_services

    def show(progress: Progress) -> None:
        total = max(progress.total, 1)
        filled = int(30 * min(progress.done, total) / total)
        bar = "#" * filled + "." * (30 - filled)
        print(  # noqa: T201
            f"\r[{bar}] {progress.done}/{progress.total} memories, {progress.rate:.0f}/s",
            end="",
            file=sys.stderr,
            flush=True,
        )

    async def run(live: Settings) -> Progress:
        embedder = embedding_provider(live)
        warm_up(live, embedder)
        async with open_resources(live) as resources:
            versions = PartitionVersions(resources.hot_redis, resources.redis, retry=False)
            # Tenants on a named embedding provider are re-embedded by theirs.
            cache = TenantSettingsCache(resources.sessions, 3600.0)
            embedders = TenantEmbedders(embedder, live.providers, cache)
            try:
                return await reindex(
                    resources.sessions,
                    embedder,
                    versions.invalidate,
                    batch=args.batch,
                    everything=args.all,
                    report=show,
                    embedders=embedders.for_tenant,
                )
            finally:
                await embedders.aclose()
                await embedder.aclose()

    with backing_services(settings) as live:
        progress = asyncio.run(run(live))
    print(file=sys.stderr)  # noqa: T201 - end the progress line
    print(json.dumps({"reindexed": progress.done}))  # noqa: T201
    return 0


def _cmd_mcp(_: Settings, args: argparse.Namespace) -> int:
    # The MCP server is a client of the API and ships with the Python SDK
    # (docs/decisions/0040-clients.md); this command only delegates to it.
    try:
        from tether_client.mcp.cli import main as mcp_main
    except ImportError as exc:
        raise StartupError(
            f"the MCP server is not installed ({exc})", "pip install './sdk/python[mcp]'"
        ) from exc
    return mcp_main(args.rest, prog="tether mcp")


def _cmd_doctor(settings: Settings, _: argparse.Namespace) -> int:
    from tether.runtime.doctor import run_checks

    findings = run_checks(settings)
    for f in findings:
        mark = "ok  " if f.ok else "FAIL"
        line = f"{mark} {f.name:18} {f.detail}"
        print(line + (f"\n     fix: {f.fix}" if not f.ok and f.fix else ""))  # noqa: T201
    return 0 if all(f.ok for f in findings) else 1


def _cmd_audit_verify(settings: Settings, args: argparse.Namespace) -> int:
    from tether.runtime.audit import verify_tenant
    from tether.runtime.services import backing_services

    with backing_services(settings, need_redis=False) as live:
        report = verify_tenant(live, args.tenant, args.checkpoint, args.write_checkpoint)
    print(json.dumps(report, indent=2))  # noqa: T201
    return 0 if report["ok"] else 1


def _cmd_audit_verify_export(_: Settings, args: argparse.Namespace) -> int:
    from tether.runtime.audit import verify_export_file

    report = verify_export_file(args.file, args.public_key)
    print(json.dumps(report, indent=2, ensure_ascii=False))  # noqa: T201
    return 0 if report["ok"] else 1


def _cmd_audit_verify_checkpoint(_: Settings, args: argparse.Namespace) -> int:
    from tether.runtime.audit import verify_checkpoint_file

    report = verify_checkpoint_file(args.file, args.public_key)
    print(json.dumps(report, indent=2))  # noqa: T201
    return 0 if report["ok"] else 1


def _audit_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    audit = sub.add_parser("audit", help="verify a tenant's audit chain or an export")
    audit_sub = audit.add_subparsers(dest="audit_command", required=True, metavar="ACTION")
    verify = audit_sub.add_parser(
        "verify",
        help="seal pending access events, recompute the tenant's keyed chain and compare it "
        "with its latest checkpoint (and --checkpoint); prints the first bad link, exits 1",
    )
    verify.add_argument("tenant", help="the tenant's name or id")
    verify.add_argument(
        "--checkpoint", default=None, help="a checkpoint JSON file kept from an earlier export"
    )
    verify.add_argument(
        "--write-checkpoint",
        default=None,
        metavar="FILE",
        help="after a good verification, sign the head and write the checkpoint to FILE",
    )
    verify.set_defaults(handler=_cmd_audit_verify)
    verify_export = audit_sub.add_parser(
        "verify-export",
        help="check a signed export file (GET /v1/audit/export) without the database: the "
        "trailer's signature, every line's MAC, the count and the digest; names the first "
        "bad line, exits 1 (needs the server's audit secret, or --public-key)",
    )
    verify_export.add_argument("file", help="the exported .jsonl file")
    verify_export.add_argument(
        "--public-key",
        default=None,
        metavar="KEY",
        help="check with the tenant's public key only (GET /v1/audit/public-key: its "
        "public_key, a file holding it, its PEM or the whole JSON answer): the trailer's "
        "signature, the count and the digest; no secret is read, and a changed line is "
        "found but not named",
    )
    verify_export.set_defaults(handler=_cmd_audit_verify_export)
    verify_checkpoint = audit_sub.add_parser(
        "verify-checkpoint",
        help="check a kept checkpoint's signature with the tenant's public key only "
        "(no database, no secret); exits 1 if it does not match",
    )
    verify_checkpoint.add_argument("file", help="a checkpoint JSON file")
    verify_checkpoint.add_argument(
        "--public-key", required=True, metavar="KEY", help="as for verify-export"
    )
    verify_checkpoint.set_defaults(handler=_cmd_audit_verify_checkpoint)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tether",
        description="Relationship-scoped long-term memory for AI chat. Settings come from "
        "TETHER_* environment variables (or .env); with no TETHER_DATABASE_URL / "
        "TETHER_REDIS_URL, an embedded PostgreSQL and Redis run under TETHER_DATA_DIR.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser(
        "serve",
        help="run the API and a worker (starts embedded Postgres/Redis when no URLs are set)",
    ).set_defaults(handler=_cmd_serve)
    sub.add_parser(
        "api",
        help="serve the API alone against external Postgres/Redis (health, readiness and "
        "metrics on TETHER_API__OPS_PORT when set): the chart's API container",
    ).set_defaults(handler=_cmd_api)
    worker = sub.add_parser("worker", help="run a Celery worker against external Postgres/Redis")
    worker.add_argument("--beat", action="store_true", help="also run the periodic scheduler")
    worker.set_defaults(handler=_cmd_worker)
    mig = sub.add_parser("migrate", help="apply or inspect database migrations")
    mig.add_argument("action", nargs="?", choices=["upgrade", "downgrade", "current"])
    mig.add_argument(
        "--check",
        action="store_true",
        help="report pending migrations and those unsafe while the running release still "
        "serves (decision 0062) as JSON; exit 3 when one is unsafe",
    )
    mig.add_argument("revision", nargs="?", help="target (default: head / one step down)")
    mig.set_defaults(handler=_cmd_migrate)
    tenant = sub.add_parser("tenant", help="manage tenants")
    tenant_sub = tenant.add_subparsers(dest="tenant_command", required=True, metavar="ACTION")
    create = tenant_sub.add_parser(
        "create", help="create a tenant; prints its id and first admin key (shown once) as JSON"
    )
    create.add_argument("name")
    create.add_argument("--region", default=None, help="data region (default: TETHER_REGION)")
    create.set_defaults(handler=_cmd_tenant_create)
    limits = tenant_sub.add_parser(
        "limits",
        help="show a tenant's limits as JSON; with --allow, first set what it is allowed "
        "(0: no limit), which its admin may lower but not exceed",
    )
    limits.add_argument("name")
    limits.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="LIMIT=VALUE",
        help="e.g. turns_per_day=20000000 (repeatable; names as in GET /v1/tenant/limits)",
    )
    limits.set_defaults(handler=_cmd_tenant_limits)
    tenant_settings = tenant_sub.add_parser(
        "settings",
        help="show a tenant's settings document as JSON; with --set, first write a new "
        "version (the body of PUT /v1/tenant/settings); audited",
    )
    tenant_settings.add_argument("name")
    tenant_settings.add_argument(
        "--set", default=None, metavar="FILE", help="a JSON file, or - for standard input"
    )
    tenant_settings.set_defaults(handler=_cmd_tenant_settings)
    tenant_sub.add_parser("list", help="every tenant as JSON").set_defaults(
        handler=_cmd_tenant_list
    )
    for action, what in (
        ("disable", "refuse every key of the tenant (403 tenant_disabled); audited"),
        ("enable", "let a disabled tenant's keys in again; audited"),
    ):
        toggle = tenant_sub.add_parser(action, help=what)
        toggle.add_argument("name")
        toggle.set_defaults(handler=_cmd_tenant_disable)
    admin_key = tenant_sub.add_parser(
        "admin-key", help="issue a new admin key for the tenant (shown once); audited"
    )
    admin_key.add_argument("name")
    admin_key.set_defaults(handler=_cmd_tenant_admin_key)
    reindex = sub.add_parser(
        "reindex",
        help="recompute memory tokens and vectors with the configured embedding model "
        "(after changing it); resumable",
    )
    reindex.add_argument("--batch", type=int, default=256, help="memories per transaction")
    reindex.add_argument(
        "--all", action="store_true", help="redo every memory, not only those of another model"
    )
    reindex.set_defaults(handler=_cmd_reindex)
    register_backup(sub)
    _audit_parser(sub)
    sub.add_parser(
        "doctor", help="check every dependency and print what is wrong, with the fix"
    ).set_defaults(handler=_cmd_doctor)
    mcp = sub.add_parser(
        "mcp",
        help="serve one relationship's memory over MCP (stdio or streamable HTTP); "
        "`tether mcp --help` for its options",
        add_help=False,
    )
    mcp.set_defaults(handler=_cmd_mcp)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and args.command != "mcp":  # only `tether mcp` passes its options on
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.rest = rest
    settings = Settings()
    configure_logging(settings.log_level)
    if getattr(args, "region", "unset") is None:
        args.region = settings.region
    try:
        # An auditor checking an export with the public key has no secret, and needs none.
        public_only = getattr(args, "public_key", None) is not None
        if args.command not in ("mcp", "doctor") and not public_only:
            from tenancy.audit import keys

            if settings.audit.secret is None:  # the key file goes there: say so plainly
                ensure_writable_dir(settings.data_dir)
            keys.configure(settings)  # tenant and limit changes are audited, with its keys
        code: int = args.handler(settings, args)
    except StartupError as exc:
        print(f"tether: error: {exc.cause}. Fix: {exc.fix}.", file=sys.stderr)  # noqa: T201
        return 1
    except KeyboardInterrupt:
        return 130  # Ctrl-C: everything was stopped on the way out
    return code


if __name__ == "__main__":
    sys.exit(main())
