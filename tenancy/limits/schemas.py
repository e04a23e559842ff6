"""API shapes of a tenant's limits (``/v1/tenant/limits``)."""

from __future__ import annotations

from typing import Annotated

import msgspec

# A limit a tenant sets for itself: a positive number (it cannot lift a limit).
Chosen = Annotated[int, msgspec.Meta(ge=1, le=10**15)] | None


class TenantLimitsUpdate(msgspec.Struct, forbid_unknown_fields=True):
    """The tenant's own limits, each at most its allowance; a missing or null one
    follows the allowance. PUT replaces the whole set."""

    key_requests_per_second: Chosen = None
    tenant_requests_per_second: Chosen = None
    turns_per_day: Chosen = None
    memories: Chosen = None
    knowledge_bytes: Chosen = None


class LimitRead(msgspec.Struct):
    # In force now (0: no limit).
    value: int
    # The most the operator allows this tenant (0: no limit).
    allowance: int
    # What the tenant's admin set, if anything.
    chosen: int | None


class TenantLimitsRead(msgspec.Struct):
    key_requests_per_second: LimitRead
    tenant_requests_per_second: LimitRead
    turns_per_day: LimitRead
    memories: LimitRead
    knowledge_bytes: LimitRead
