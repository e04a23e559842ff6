"""One PrivacyFilter per tenant per process, rebuilt when its settings change.

Building a filter compiles and vets the tenant's patterns, so it is cached; the
settings are re-read from Postgres at most every ``ttl`` seconds, which bounds how long
another process keeps using an old pattern set after an edit.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.models import Tenant
from tether.privacy.filter import PrivacyFilter
from tether.privacy.tenant_patterns import PatternRefused, compile_pattern

log = logging.getLogger(__name__)

Patterns = tuple[tuple[str, str], ...]


@dataclass(slots=True)
class _Entry:
    patterns: Patterns
    documents: bool
    filter: PrivacyFilter
    loaded_at: float


def patterns_of(raw: list[list[str]]) -> Patterns:
    return tuple((str(tag), str(pattern)) for tag, pattern in raw)


def build_filter(tenant_id: uuid.UUID, patterns: Patterns) -> PrivacyFilter:
    """The tenant's filter. A stored pattern the filter refuses (saved before patterns
    ran on RE2, e.g. with a lookahead) is left out and logged by tag, never by text:
    the built-ins and the tenant's other patterns still apply."""
    usable = []
    for index, (tag, pattern) in enumerate(patterns):
        try:
            compile_pattern(tag, pattern, index)
        except PatternRefused as exc:
            log.warning(
                "tenant %s: privacy pattern %s is not applied (%s); replace it",
                tenant_id,
                tag,
                exc.reason,
            )
            continue
        usable.append((tag, pattern))
    try:
        return PrivacyFilter(usable)
    except PatternRefused as exc:  # the set as a whole is too large
        log.warning(
            "tenant %s: privacy patterns not applied (%s); replace them", tenant_id, exc.reason
        )
        return PrivacyFilter()


class TenantFilters:
    def __init__(self, ttl_seconds: float) -> None:
        self._ttl = ttl_seconds
        self._entries: dict[uuid.UUID, _Entry] = {}
        self._default = PrivacyFilter()

    async def for_tenant(self, session: AsyncSession, tenant_id: uuid.UUID) -> PrivacyFilter:
        return (await self._entry(session, tenant_id)).filter

    async def for_documents(
        self, session: AsyncSession, tenant_id: uuid.UUID
    ) -> PrivacyFilter | None:
        """The filter for knowledge-base documents, None where the tenant leaves them be."""
        entry = await self._entry(session, tenant_id)
        return entry.filter if entry.documents else None

    async def _entry(self, session: AsyncSession, tenant_id: uuid.UUID) -> _Entry:
        entry = self._entries.get(tenant_id)
        now = time.monotonic()
        if entry is not None and now - entry.loaded_at < self._ttl:
            return entry
        statement = select(Tenant.privacy_patterns, Tenant.privacy_filter_documents).where(
            Tenant.id == tenant_id
        )
        row = (await session.execute(statement)).one_or_none()
        patterns = patterns_of(row[0] if row else [])
        documents = bool(row[1]) if row else False
        if entry is not None and entry.patterns == patterns:
            entry.documents, entry.loaded_at = documents, now
            return entry
        built = build_filter(tenant_id, patterns) if patterns else self._default
        entry = self._entries[tenant_id] = _Entry(patterns, documents, built, now)
        return entry

    def forget(self, tenant_id: uuid.UUID) -> None:
        """Drop this process's cached filter (after the tenant's patterns changed here)."""
        self._entries.pop(tenant_id, None)
