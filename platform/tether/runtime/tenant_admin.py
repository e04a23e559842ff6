"""``tether tenant list | disable | enable | admin-key``: the operator's day-2 handling of
tenants. Row-level security binds every statement to one tenant, so listing asks the
system function for the ids (migration 0017) and reads each tenant as itself."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.access.repositories import TenantRepository
from tenancy.access.services import TenantService
from tenancy.audit.log import Actor
from tenancy.models import Tenant
from tether.core.database import create_engine, create_session_factory, transaction
from tether.core.ids import TenantId
from tether.core.settings import Settings
from tether.core.tenant_sessions import tenant_transaction
from tether.runtime.preflight import StartupError

# Who the audit chain names for what the operator's CLI does.
OPERATOR_CLI = Actor(None, "operator-cli", None)

T = TypeVar("T")
Sessions = async_sessionmaker[AsyncSession]


def _row(tenant: Tenant) -> dict[str, Any]:
    return {
        "tenant_id": str(tenant.id),
        "name": tenant.name,
        "region": tenant.region,
        "disabled": tenant.disabled_at is not None,
        "disabled_at": None if tenant.disabled_at is None else tenant.disabled_at.isoformat(),
        "created_at": tenant.created_at.isoformat(),
    }


def _with_sessions(settings: Settings, work: Callable[[Sessions], Awaitable[T]]) -> T:
    async def run() -> T:
        engine = create_engine(settings)
        try:
            return await work(create_session_factory(engine))
        finally:
            await engine.dispose()

    return asyncio.run(run())


async def _tenant_id(sessions: Sessions, name: str) -> TenantId:
    async with transaction(sessions) as session:
        tenant_id = await TenantRepository(session).id_by_name(name)
    if tenant_id is None:
        raise StartupError(f"no tenant named {name!r}", "list them with `tether tenant list`")
    return tenant_id


def list_tenants(settings: Settings) -> list[dict[str, Any]]:
    async def work(sessions: Sessions) -> list[dict[str, Any]]:
        async with transaction(sessions) as session:
            ids = await TenantRepository(session).ids()
        rows = []
        for tenant_id in ids:
            async with tenant_transaction(sessions, tenant_id) as session:
                tenant = await TenantRepository(session).get(tenant_id)
                if tenant is not None:
                    rows.append(_row(tenant))
        return rows

    return _with_sessions(settings, work)


def set_disabled(settings: Settings, name: str, disabled: bool) -> dict[str, Any]:
    async def work(sessions: Sessions) -> dict[str, Any]:
        tenant_id = await _tenant_id(sessions, name)
        async with tenant_transaction(sessions, tenant_id) as session:
            tenant = await TenantService(session).set_disabled(tenant_id, disabled, OPERATOR_CLI)
            return _row(tenant)

    return _with_sessions(settings, work)


def issue_admin_key(settings: Settings, name: str) -> dict[str, str]:
    async def work(sessions: Sessions) -> dict[str, str]:
        tenant_id = await _tenant_id(sessions, name)
        async with tenant_transaction(sessions, tenant_id) as session:
            created = await TenantService(session).issue_admin_key(tenant_id, OPERATOR_CLI)
        return {
            "tenant": name,
            "admin_key_id": str(created.key.id),
            "admin_token": created.token,
        }

    return _with_sessions(settings, work)


def tenant_settings(settings: Settings, name: str, document: bytes | None) -> dict[str, Any]:
    """``tether tenant settings``: the tenant's settings document; with ``document``
    (the JSON a PUT /v1/tenant/settings takes) first write it as a new version, audited
    as the operator's CLI. Every process applies it within the settings TTL."""
    import msgspec

    from tenancy.settings.errors import SettingsChanged
    from tenancy.settings.providers import ProviderRefused
    from tenancy.settings.schemas import TenantSettingsWrite
    from tenancy.settings.services import TenantSettingsService, etag

    write: TenantSettingsWrite | None = None
    if document is not None:
        try:
            write = msgspec.json.decode(document, type=TenantSettingsWrite)
        except msgspec.ValidationError as exc:
            raise StartupError(
                f"the settings are invalid: {exc}", "see docs/tenant-settings.md"
            ) from exc
        except msgspec.DecodeError as exc:
            raise StartupError(f"the settings are not JSON: {exc}", "send one object") from exc

    async def work(sessions: Sessions) -> dict[str, Any]:
        tenant_id = await _tenant_id(sessions, name)
        async with tenant_transaction(sessions, tenant_id) as session:
            service = TenantSettingsService(session, tenant_id, OPERATOR_CLI, settings)
            current = await service.get()
            if write is not None:
                try:
                    current = await service.put(write, etag(current.version))
                except SettingsChanged as exc:
                    raise StartupError(exc.detail, "run it again") from exc
                except ProviderRefused as exc:
                    messages = "; ".join(
                        f"{e['field']}: {e['message']}" for e in exc.extra["errors"]
                    )
                    raise StartupError(
                        f"the settings are invalid: {messages}", "see docs/tenant-settings.md"
                    ) from exc
        shown: dict[str, Any] = msgspec.to_builtins(current)
        return {"tenant": name, **shown}

    return _with_sessions(settings, work)
