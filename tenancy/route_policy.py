"""What a route declares for the access guard (``tenancy.access.guard``) to decide on:
every route says ``opt=policy(object, action)``, or is public. Below the guard, so that
every domain's controllers, the audit log's included, can declare it."""

from __future__ import annotations

from typing import Any

POLICY_OPT = "policy"
PUBLIC_OPT = "exclude_from_auth"


def policy(obj: str, action: str) -> dict[str, Any]:
    """Route ``opt`` declaring what the route does, for the guard to decide on."""
    return {POLICY_OPT: (obj, action)}
