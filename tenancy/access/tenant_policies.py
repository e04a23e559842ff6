"""Each tenant's effective policy in this process: the file policy plus its own rules.

A tenant without rules shares the file enforcer; a tenant with rules gets its own,
rebuilt only when its rules change. Rules are re-read from Postgres when a tenant's
snapshot is older than ``ttl`` seconds (which bounds how long another replica decides
with old rules); a change made through this process is applied at once. When Postgres
cannot be read, the last snapshot stays in force; without one, requests are refused
rather than decided without the tenant's possible denies.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, replace

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tenancy.access.policy import PolicyEnforcer
from tenancy.access.policy_rules import PolicyRule, normalised, refusal
from tenancy.access.repositories import TenantPolicyRepository
from tenancy.errors import PolicyUnavailable
from tether.core.database import TENANT_INFO
from tether.core.database_errors import DATABASE_ERRORS
from tether.core.ids import TenantId

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Snapshot:
    rules: tuple[PolicyRule, ...]
    enforcer: PolicyEnforcer
    read_at: float  # when the rules were read (monotonic): an older read never wins
    fresh_until: float


class TenantPolicies:
    """Tenant-bound enforcers: ``await refresh(tenant)`` (the guard), then
    ``for_tenant(tenant)`` wherever a decision is made during the request."""

    def __init__(
        self,
        base: PolicyEnforcer,
        sessions: async_sessionmaker[AsyncSession],
        ttl: float,
        size: int = 10_000,
    ) -> None:
        self.base = base
        self._sessions = sessions
        self._ttl = ttl
        self._size = size
        self._snapshots: OrderedDict[TenantId, _Snapshot] = OrderedDict()
        self._loading: dict[TenantId, asyncio.Task[None]] = {}

    def for_tenant(self, tenant_id: TenantId) -> PolicyEnforcer:
        """The tenant's enforcer as last loaded (by the guard, earlier in the request)."""
        snapshot = self._snapshots.get(tenant_id)
        if snapshot is None:
            raise PolicyUnavailable("the tenant's policy rules could not be read; retry")
        return snapshot.enforcer

    async def refresh(self, tenant_id: TenantId) -> PolicyEnforcer:
        """The tenant's enforcer, re-reading its rules first if the snapshot is stale."""
        snapshot = self._snapshots.get(tenant_id)
        if snapshot is None or snapshot.fresh_until <= time.monotonic():
            await self._load_once(tenant_id)
        return self.for_tenant(tenant_id)

    def install(self, tenant_id: TenantId, rules: tuple[PolicyRule, ...]) -> None:
        """Apply rules this process has just committed (no need to wait for the TTL)."""
        self._store(tenant_id, rules, time.monotonic())

    async def _load_once(self, tenant_id: TenantId) -> None:
        # Concurrent requests of one tenant share one read.
        task = self._loading.get(tenant_id)
        if task is None:
            task = asyncio.create_task(self._load(tenant_id))
            self._loading[tenant_id] = task
            task.add_done_callback(lambda _: self._loading.pop(tenant_id, None))
        await asyncio.shield(task)

    async def _load(self, tenant_id: TenantId) -> None:
        read_at = time.monotonic()
        try:
            async with self._sessions() as session:
                session.info[TENANT_INFO] = str(tenant_id)
                rows = await TenantPolicyRepository(session, tenant_id).rules()
        except (*DATABASE_ERRORS, OSError) as exc:
            self._keep_stale(tenant_id, exc)
            return
        self._store(tenant_id, _acceptable(tenant_id, rows), read_at)

    def _keep_stale(self, tenant_id: TenantId, exc: Exception) -> None:
        snapshot = self._snapshots.get(tenant_id)
        if snapshot is None:
            log.error("tenant %s: policy rules unreadable and none loaded: %s", tenant_id, exc)
            return
        log.warning("tenant %s: policy rules unreadable, keeping the last ones: %s", tenant_id, exc)
        # Retry after another TTL, not on every request meanwhile.
        self._snapshots[tenant_id] = replace(snapshot, fresh_until=time.monotonic() + self._ttl)

    def _store(self, tenant_id: TenantId, rules: tuple[PolicyRule, ...], read_at: float) -> None:
        current = self._snapshots.get(tenant_id)
        if current is not None and current.read_at > read_at:
            return  # a newer snapshot (a change installed meanwhile) wins
        if current is not None and current.rules == rules:
            enforcer = current.enforcer
        else:
            enforcer = self.base.with_tenant_rules(rules) if rules else self.base
        self._snapshots[tenant_id] = _Snapshot(rules, enforcer, read_at, read_at + self._ttl)
        self._snapshots.move_to_end(tenant_id)
        while len(self._snapshots) > self._size:
            self._snapshots.popitem(last=False)


def _acceptable(tenant_id: TenantId, rows: list[PolicyRule]) -> tuple[PolicyRule, ...]:
    """The rows a tenant may hold. The API refuses the others; a row written around it
    (by hand, in SQL) is ignored here, so administrative objects stay file-only."""
    kept = []
    for rule in rows:
        refused = refusal(rule)
        if refused is None:
            kept.append(rule)
        else:
            log.warning("tenant %s: ignoring policy rule %s: %s", tenant_id, rule, refused[1])
    return normalised(kept)
