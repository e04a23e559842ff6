"""The access log: who read which relationship's memories, and why (decision 0042).

A read must not wait for the chain's per-tenant lock, nor for a transaction of its own:
a process collects the access events of its requests and writes them every
``audit.access_flush_seconds`` as one multi-row INSERT per tenant (no lock; the chain
is not touched). The sealer (``tenancy.audit.sealing``) later covers them with a Merkle
root chained into the audit log. What a process collected and had not yet written when
it dies is lost (at most one flush interval); a write that fails is retried with the
next flush, up to ``MAX_PENDING`` events.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.audit.models import AuditAccessEvent
from tenancy.principal import Principal
from tether.core.background import spawn
from tether.core.ids import TenantId, new_id
from tether.core.logging import request_id_var
from tether.core.tenant_sessions import tenant_transaction

log = logging.getLogger(__name__)

PURPOSES = (
    "context",
    "search",
    "memory_list",
    "memory_read",
    "memory_history",
    "memory_sources",
    "export",
    "support_view",
    "playground",
)
MAX_PENDING = 200_000
Row = dict[str, Any]


def access_row(
    principal: Principal,
    purpose: str,
    relationship_id: uuid.UUID | None,
    global_user_id: uuid.UUID | None,
    memory_ids: Iterable[uuid.UUID],
) -> Row:
    """One access event (ids only: never content)."""
    return {
        "id": new_id(),
        "tenant_id": principal.tenant_id,
        "at": datetime.now(UTC),
        "actor_key_id": principal.key_id,
        "actor_role": principal.role.value,
        "actor_subject": principal.subject,
        "purpose": purpose,
        "relationship_id": relationship_id,
        "global_user_id": global_user_id,
        "request_id": request_id_var.get(),
        "memory_ids": list(dict.fromkeys(memory_ids)),
    }


class AccessLog:
    """A process's buffer of access events, written in batches."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], flush_seconds: float) -> None:
        self._sessions = sessions
        self._flush_seconds = flush_seconds
        self._pending: list[Row] = []
        self._timer: asyncio.TimerHandle | None = None
        self._lock = asyncio.Lock()

    def note(
        self,
        principal: Principal,
        purpose: str,
        relationship_id: uuid.UUID | None,
        global_user_id: uuid.UUID | None,
        memory_ids: Iterable[uuid.UUID] = (),
    ) -> None:
        """Record one read; written with the next flush (microseconds on the request)."""
        self._pending.append(
            access_row(principal, purpose, relationship_id, global_user_id, memory_ids)
        )
        if self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self._flush_seconds, self._flush_later)

    def _flush_later(self) -> None:
        self._timer = None
        spawn(self.flush(), "access log flush")

    async def flush(self) -> int:
        """Write what was collected (also before a query, a seal, and at shutdown)."""
        async with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            pending, self._pending = self._pending, []
            by_tenant: dict[uuid.UUID, list[Row]] = {}
            for row in pending:
                by_tenant.setdefault(row["tenant_id"], []).append(row)
            written = 0
            for tenant_id, rows in by_tenant.items():
                try:
                    await write_rows(self._sessions, TenantId(tenant_id), rows)
                    written += len(rows)
                except Exception as exc:  # noqa: BLE001 - kept and retried, never raised to a reader
                    log.warning("access events of tenant %s not written yet: %s", tenant_id, exc)
                    self._keep(rows)
            return written

    async def close(self) -> int:
        """The last flush, at shutdown. What cannot be written now is reported and let
        go: retrying would outlive the process's resources (and, in one process running
        several apps, keep a stopped app's retries alive)."""
        written = await self.flush()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pending:
            log.error("access log: %d events not written at shutdown", len(self._pending))
            self._pending = []
        return written

    def _keep(self, rows: list[Row]) -> None:
        self._pending[:0] = rows
        if len(self._pending) > MAX_PENDING:
            dropped = len(self._pending) - MAX_PENDING
            log.error("access log: %d events dropped (the database is away too long)", dropped)
            del self._pending[:dropped]
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(
                self._flush_seconds, self._flush_later
            )


async def write_rows(
    sessions: async_sessionmaker[AsyncSession], tenant_id: TenantId, rows: list[Row]
) -> None:
    async with tenant_transaction(sessions, tenant_id) as session:
        await session.execute(insert(AuditAccessEvent), rows)
