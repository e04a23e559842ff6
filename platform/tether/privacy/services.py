"""Reading and replacing a tenant's own privacy patterns (admin)."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.models import Tenant
from tether.core.errors import InvalidInput
from tether.privacy.filter import MaskResult, PrivacyFilter
from tether.privacy.schemas import PrivacyPattern, PrivacyPatterns
from tether.privacy.tenant_filters import TenantFilters


class InvalidPrivacyPattern(InvalidInput):
    code = "invalid_privacy_pattern"
    title = "A privacy pattern was refused"


class PrivacyPatternService:
    def __init__(self, session: AsyncSession, principal: Principal, filters: TenantFilters) -> None:
        self._session = session
        self._tenant_id = principal.tenant_id
        self._filters = filters

    async def get(self) -> PrivacyPatterns:
        statement = select(Tenant.privacy_patterns).where(Tenant.id == self._tenant_id)
        raw = (await self._session.execute(statement)).scalar_one()
        return PrivacyPatterns([PrivacyPattern(tag, pattern) for tag, pattern in raw])

    async def put(self, data: PrivacyPatterns) -> PrivacyPatterns:
        """Replace the patterns after checking them the way the filter will use them
        (compiles, no empty matches, no catastrophic backtracking)."""
        pairs = _checked(data)
        await self._session.execute(
            update(Tenant)
            .where(Tenant.id == self._tenant_id)
            .values(privacy_patterns=[list(p) for p in pairs])
        )
        self._filters.forget(self._tenant_id)  # this process applies them at once
        return data

    def try_patterns(self, data: PrivacyPatterns, text: str) -> MaskResult:
        """What the write path would store for ``text`` with these patterns (and the
        built-in detectors), without saving anything: the console's test box."""
        return PrivacyFilter(_checked(data)).mask(text)


def _checked(data: PrivacyPatterns) -> list[tuple[str, str]]:
    pairs = [(p.tag, p.pattern) for p in data.patterns]
    for index, pair in enumerate(pairs):
        try:
            PrivacyFilter([pair])
        except ValueError as exc:
            field = f"patterns[{index}].pattern"
            raise InvalidPrivacyPattern(
                str(exc), errors=[{"field": field, "message": str(exc)}]
            ) from exc
    return pairs
