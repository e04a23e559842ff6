"""Each tenant's limits, per process, re-read from Postgres at most every ``ttl``
seconds (which bounds how long another process applies old limits after a change)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.limits.repositories import TenantLimitsRepository
from tenancy.limits.values import TenantLimits
from tether.core.database_errors import DATABASE_ERRORS
from tether.core.ids import TenantId
from tether.core.settings import LimitsSettings
from tether.core.tenant_sessions import tenant_session

log = logging.getLogger(__name__)
# Postgres away: the defaults apply, and the tenant is asked again this much later.
RETRY_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class _Entry:
    limits: TenantLimits
    until: float


class TenantLimitsCache:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], defaults: LimitsSettings, ttl: float
    ) -> None:
        self._sessions = sessions
        self._defaults = defaults
        self._ttl = ttl
        self._entries: dict[TenantId, _Entry] = {}

    async def get(self, tenant_id: TenantId) -> TenantLimits:
        entry = self._entries.get(tenant_id)
        now = time.monotonic()
        if entry is not None and entry.until > now:
            return entry.limits
        try:
            limits, ttl = await self._load(tenant_id), self._ttl
        except DATABASE_ERRORS as exc:
            log.warning("limits of tenant %s not read (%s): defaults apply", tenant_id, exc)
            limits = entry.limits if entry else TenantLimits.resolve(self._defaults)
            ttl = RETRY_SECONDS
        self._entries[tenant_id] = _Entry(limits, now + ttl)
        return limits

    async def _load(self, tenant_id: TenantId) -> TenantLimits:
        async with tenant_session(self._sessions, tenant_id) as session:
            row = await TenantLimitsRepository(session, tenant_id).get()
        if row is None:
            return TenantLimits.resolve(self._defaults)
        return TenantLimits.resolve(self._defaults, row.allowance, row.chosen)

    def forget(self, tenant_id: TenantId) -> None:
        """Re-read this tenant's limits on next use (after they changed here)."""
        self._entries.pop(tenant_id, None)
