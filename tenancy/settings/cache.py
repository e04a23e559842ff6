"""Each tenant's settings, per process, re-read from Postgres at most every ``ttl``
seconds: a change reaches every API process and worker within that, with no restart."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.settings.schemas import TenantSettingsDocument
from tenancy.settings.services import current_settings
from tether.core.database_errors import DATABASE_ERRORS
from tether.core.ids import TenantId
from tether.core.tenant_sessions import tenant_session

log = logging.getLogger(__name__)
RETRY_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class _Entry:
    document: TenantSettingsDocument
    until: float


class TenantSettingsCache:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], ttl: float) -> None:
        self._sessions = sessions
        self._ttl = ttl
        self._entries: dict[TenantId, _Entry] = {}

    async def get(self, tenant_id: TenantId) -> TenantSettingsDocument:
        entry = self._entries.get(tenant_id)
        now = time.monotonic()
        if entry is not None and entry.until > now:
            return entry.document
        try:
            async with tenant_session(self._sessions, tenant_id) as session:
                document, ttl = await current_settings(session, tenant_id), self._ttl
        except DATABASE_ERRORS as exc:
            log.warning("settings of tenant %s not read (%s): last known apply", tenant_id, exc)
            document = entry.document if entry else TenantSettingsDocument()
            ttl = RETRY_SECONDS
        self._entries[tenant_id] = _Entry(document, now + ttl)
        return document

    def forget(self, tenant_id: TenantId) -> None:
        self._entries.pop(tenant_id, None)
