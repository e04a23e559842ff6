"""Reading and replacing a tenant's privacy settings (admin)."""

from __future__ import annotations

import hashlib
import json

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.access.principal import Principal
from tenancy.audit.log import Actor, AuditLog
from tenancy.models import Tenant
from tether.core.errors import InvalidInput
from tether.privacy.filter import MaskResult, PrivacyFilter
from tether.privacy.schemas import PrivacyPattern, PrivacyPatterns
from tether.privacy.tenant_filters import TenantFilters
from tether.privacy.tenant_patterns import PatternRefused, compile_pattern


class InvalidPrivacyPattern(InvalidInput):
    code = "invalid_privacy_pattern"
    title = "A privacy pattern was refused"


class PrivacyPatternService:
    def __init__(self, session: AsyncSession, principal: Principal, filters: TenantFilters) -> None:
        self._session = session
        self._principal = principal
        self._tenant_id = principal.tenant_id
        self._filters = filters

    async def get(self) -> PrivacyPatterns:
        statement = select(Tenant.privacy_patterns, Tenant.privacy_filter_documents).where(
            Tenant.id == self._tenant_id
        )
        raw, documents = (await self._session.execute(statement)).one()
        return PrivacyPatterns([PrivacyPattern(tag, pattern) for tag, pattern in raw], documents)

    async def put(self, data: PrivacyPatterns) -> PrivacyPatterns:
        """Replace the settings after vetting every pattern the way the filter compiles
        it; each refused pattern is named with a stable ``reason``."""
        pairs = _checked(data)
        await self._session.execute(
            update(Tenant)
            .where(Tenant.id == self._tenant_id)
            .values(
                privacy_patterns=[list(p) for p in pairs],
                privacy_filter_documents=data.filter_documents,
            )
        )
        # Audited by tags and a fingerprint: a pattern may itself spell out an identifier.
        fingerprint = hashlib.sha256(json.dumps(pairs, ensure_ascii=False).encode()).hexdigest()
        await AuditLog(self._session).record(
            self._tenant_id,
            Actor.of(self._principal),
            "privacy_patterns.change",
            "tenant_settings",
            detail={
                "tags": sorted({tag for tag, _ in pairs}),
                "patterns": len(pairs),
                "fingerprint": fingerprint,
                "filter_documents": data.filter_documents,
            },
        )
        self._filters.forget(self._tenant_id)  # this process applies them at once
        return data

    def try_patterns(self, data: PrivacyPatterns, text: str) -> MaskResult:
        """What the write path would store for ``text`` with these patterns (and the
        built-in detectors), without saving anything: the console's test box."""
        return PrivacyFilter(_checked(data)).mask(text)


def _checked(data: PrivacyPatterns) -> list[tuple[str, str]]:
    """The patterns as the filter takes them, or 422 naming every refused one."""
    pairs = [(p.tag, p.pattern) for p in data.patterns]
    errors = []
    for index, (tag, pattern) in enumerate(pairs):
        try:
            compile_pattern(tag, pattern, index)
        except PatternRefused as exc:
            field = f"patterns[{index}].pattern"
            errors.append({"field": field, "message": str(exc), "reason": exc.reason})
    if not errors:
        try:
            PrivacyFilter(pairs)  # the limits of the set as a whole
        except PatternRefused as exc:
            errors.append({"field": "patterns", "message": str(exc), "reason": exc.reason})
    if errors:
        raise InvalidPrivacyPattern(errors[0]["message"], errors=errors)
    return pairs
