"""When each API key was last used, written cheaply: a process notes a key's use at most
once per ``resolution`` seconds, and writes what it noted in one batch per tenant a
moment later, off the request path. Best effort: a process that dies, or finds Postgres
away, loses at most its last few notes (the next use notes the key again)."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.access.principal import Principal
from tenancy.access.repositories import ApiKeyRepository
from tether.core.background import spawn
from tether.core.database_errors import DATABASE_ERRORS
from tether.core.ids import TenantId
from tether.core.tenant_sessions import tenant_transaction

log = logging.getLogger(__name__)
FLUSH_DELAY_SECONDS = 2.0
_MAX_REMEMBERED = 100_000


class KeyUsage:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        resolution_seconds: float,
        flush_delay_seconds: float = FLUSH_DELAY_SECONDS,
    ) -> None:
        self._sessions = sessions
        self._resolution = resolution_seconds
        self._delay = flush_delay_seconds
        self._noted: dict[uuid.UUID, float] = {}  # key -> monotonic time last noted
        self._pending: dict[uuid.UUID, tuple[TenantId, datetime]] = {}
        self._timer: asyncio.TimerHandle | None = None

    def touch(self, principal: Principal) -> None:
        """The key was used now (cheap: a dict lookup unless it is time to note it)."""
        now = time.monotonic()
        last = self._noted.get(principal.key_id)
        if last is not None and now - last < self._resolution:
            return
        if len(self._noted) >= _MAX_REMEMBERED:
            self._noted = {k: t for k, t in self._noted.items() if now - t < self._resolution}
        self._noted[principal.key_id] = now
        self._pending[principal.key_id] = (principal.tenant_id, datetime.now(UTC))
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._delay, self._flush_later)

    def _flush_later(self) -> None:
        self._timer = None
        spawn(self.flush(), "key usage flush")

    async def flush(self) -> None:
        """Write what was noted (also called at shutdown)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, {}
        by_tenant: dict[TenantId, list[tuple[uuid.UUID, datetime]]] = defaultdict(list)
        for key_id, (tenant_id, at) in pending.items():
            by_tenant[tenant_id].append((key_id, at))
        for tenant_id, used in by_tenant.items():
            try:
                async with tenant_transaction(self._sessions, tenant_id) as session:
                    await ApiKeyRepository(session, tenant_id).record_use(used)
            except DATABASE_ERRORS as exc:
                log.info("last use of %d keys not written: %s", len(used), type(exc).__name__)
