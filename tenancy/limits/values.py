"""The limits of one tenant, resolved from the deployment's defaults, the operator's
allowance for the tenant and the tenant admin's own choice."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from tether.core.settings import LimitsSettings


class LimitName(StrEnum):
    KEY_REQUESTS_PER_SECOND = "key_requests_per_second"
    TENANT_REQUESTS_PER_SECOND = "tenant_requests_per_second"
    TURNS_PER_DAY = "turns_per_day"
    MEMORIES = "memories"
    KNOWLEDGE_BYTES = "knowledge_bytes"


NO_LIMIT = 0


def within(value: int, allowance: int) -> bool:
    """Whether ``value`` is no more than ``allowance`` (where 0 means no limit)."""
    if allowance == NO_LIMIT:
        return True
    return value != NO_LIMIT and value <= allowance


def _known(raw: Mapping[str, object]) -> dict[LimitName, int]:
    # Stored maps may hold names this version does not know (a newer one wrote them).
    names = {name.value: name for name in LimitName}
    return {
        names[key]: value
        for key, value in raw.items()
        if key in names and isinstance(value, int) and value >= 0
    }


@dataclass(frozen=True, slots=True)
class TenantLimits:
    allowance: Mapping[LimitName, int]
    chosen: Mapping[LimitName, int]

    @classmethod
    def resolve(
        cls,
        defaults: LimitsSettings,
        allowance: Mapping[str, object] | None = None,
        chosen: Mapping[str, object] | None = None,
    ) -> TenantLimits:
        granted = _known(allowance or {})
        return cls(
            allowance={n: granted.get(n, getattr(defaults, n.value)) for n in LimitName},
            chosen=_known(chosen or {}),
        )

    def __getitem__(self, name: LimitName) -> int:
        """The limit in force: the tenant's choice if within its allowance, else the
        allowance (the operator may have lowered it since)."""
        allowed = self.allowance[name]
        chosen = self.chosen.get(name)
        return chosen if chosen is not None and within(chosen, allowed) else allowed
