"""Reading and changing a tenant's limits: its admin chooses values up to what the
operator allows it; the operator (``tether tenant limits``) sets that allowance."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.audit.log import SYSTEM, Actor, AuditLog
from tenancy.limits.repositories import TenantLimitsRepository
from tenancy.limits.schemas import LimitRead, TenantLimitsRead, TenantLimitsUpdate
from tenancy.limits.values import LimitName, TenantLimits, within
from tether.core.errors import InvalidInput
from tether.core.ids import TenantId
from tether.core.settings import LimitsSettings


class LimitAboveAllowance(InvalidInput):
    code = "limit_above_allowance"
    title = "A limit is above what this tenant is allowed"


def read(limits: TenantLimits) -> TenantLimitsRead:
    fields = {
        name.value: LimitRead(limits[name], limits.allowance[name], limits.chosen.get(name))
        for name in LimitName
    }
    return TenantLimitsRead(**fields)


class TenantLimitsService:
    def __init__(
        self,
        session: AsyncSession,
        tenant_id: TenantId,
        defaults: LimitsSettings,
        actor: Actor = SYSTEM,
    ) -> None:
        self._rows = TenantLimitsRepository(session, tenant_id)
        self._audit = AuditLog(session)
        self._tenant_id = tenant_id
        self._defaults = defaults
        self._actor = actor

    async def current(self, *, lock: bool = False) -> TenantLimits:
        row = await self._rows.get(lock=lock)
        if row is None:
            return TenantLimits.resolve(self._defaults)
        return TenantLimits.resolve(self._defaults, row.allowance, row.chosen)

    async def get(self) -> TenantLimitsRead:
        return read(await self.current())

    async def choose(self, data: TenantLimitsUpdate) -> TenantLimitsRead:
        """Replace the tenant's own limits (each at most its allowance); audited."""
        before = await self.current(lock=True)
        chosen = {
            name: value for name in LimitName if (value := getattr(data, name.value)) is not None
        }
        errors = [
            {"field": name.value, "message": f"at most {before.allowance[name]} is allowed"}
            for name, value in chosen.items()
            if not within(value, before.allowance[name])
        ]
        if errors:
            fields = ", ".join(e["field"] for e in errors)
            raise LimitAboveAllowance(f"above this tenant's allowance: {fields}", errors=errors)
        await self._rows.save(chosen={n.value: v for n, v in chosen.items()})
        await self._record("limits.change", before.chosen, chosen)
        return read(TenantLimits(before.allowance, chosen))

    async def allow(self, allowance: Mapping[LimitName, int]) -> TenantLimitsRead:
        """Set the operator's allowance for the named limits (others keep theirs)."""
        before = await self.current(lock=True)
        row = await self._rows.get()
        granted = {**(row.allowance if row else {}), **{n.value: v for n, v in allowance.items()}}
        await self._rows.save(allowance=granted)
        after = TenantLimits.resolve(self._defaults, granted, row.chosen if row else {})
        await self._record("limits.allow", before.allowance, after.allowance)
        return read(after)

    async def _record(
        self, action: str, before: Mapping[LimitName, int], after: Mapping[LimitName, int]
    ) -> None:
        detail = {
            "before": {n.value: v for n, v in before.items()},
            "after": {n.value: v for n, v in after.items()},
        }
        await self._audit.record(
            self._tenant_id, self._actor, action, "tenant_settings", detail=detail
        )
