"""``tether tenant limits NAME [--allow LIMIT=VALUE ...]``: the operator's side of a
tenant's limits (the allowance its admin may not exceed)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import msgspec

from tenancy.access.repositories import TenantRepository
from tenancy.limits.services import TenantLimitsService
from tenancy.limits.values import LimitName
from tether.core.database import create_engine, create_session_factory, transaction
from tether.core.settings import Settings
from tether.core.tenant_sessions import tenant_transaction
from tether.runtime.preflight import StartupError


def _parse(pairs: Sequence[str]) -> dict[LimitName, int]:
    names = ", ".join(n.value for n in LimitName)
    allowance = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if name not in {n.value for n in LimitName} or not value.isdigit():
            raise StartupError(f"--allow {pair!r} is not LIMIT=VALUE", f"name one of {names}")
        allowance[LimitName(name)] = int(value)
    return allowance


def show_or_allow(settings: Settings, name: str, pairs: Sequence[str]) -> dict[str, Any]:
    allowance = _parse(pairs)

    async def run() -> dict[str, Any]:
        engine = create_engine(settings)
        sessions = create_session_factory(engine)
        try:
            async with transaction(sessions) as session:
                tenant_id = await TenantRepository(session).id_by_name(name)
            if tenant_id is None:
                raise StartupError(f"no tenant named {name!r}", "check `tether tenant create`")
            async with tenant_transaction(sessions, tenant_id) as session:
                service = TenantLimitsService(session, tenant_id, settings.limits)
                read = await (service.allow(allowance) if allowance else service.get())
        finally:
            await engine.dispose()
        return {"tenant": name, "limits": msgspec.to_builtins(read)}

    return asyncio.run(run())
