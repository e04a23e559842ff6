"""One PrivacyFilter per tenant per process, rebuilt when its patterns change.

Building a filter compiles and vets the tenant's patterns, so it is cached; the
patterns are re-read from Postgres at most every ``ttl`` seconds, which bounds how long
another process keeps using an old pattern set after an edit.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.models import Tenant
from tether.privacy.filter import PrivacyFilter

Patterns = tuple[tuple[str, str], ...]


@dataclass(slots=True)
class _Entry:
    patterns: Patterns
    filter: PrivacyFilter
    loaded_at: float


def patterns_of(raw: list[list[str]]) -> Patterns:
    return tuple((str(tag), str(pattern)) for tag, pattern in raw)


class TenantFilters:
    def __init__(self, ttl_seconds: float) -> None:
        self._ttl = ttl_seconds
        self._entries: dict[uuid.UUID, _Entry] = {}
        self._default = PrivacyFilter()

    async def for_tenant(self, session: AsyncSession, tenant_id: uuid.UUID) -> PrivacyFilter:
        entry = self._entries.get(tenant_id)
        now = time.monotonic()
        if entry is not None and now - entry.loaded_at < self._ttl:
            return entry.filter
        raw = (
            await session.execute(select(Tenant.privacy_patterns).where(Tenant.id == tenant_id))
        ).scalar_one_or_none()
        patterns = patterns_of(raw or [])
        if entry is not None and entry.patterns == patterns:
            entry.loaded_at = now
            return entry.filter
        built = PrivacyFilter(patterns) if patterns else self._default
        self._entries[tenant_id] = _Entry(patterns, built, now)
        return built

    def forget(self, tenant_id: uuid.UUID) -> None:
        """Drop this process's cached filter (after the tenant's patterns changed here)."""
        self._entries.pop(tenant_id, None)
