"""Policy rules and what a tenant may add to the file policy.

Tenant rules name only known roles, content objects and actions. The administrative
objects stay file-only: a tenant rule could otherwise let a non-admin key mint keys or
edit policies, or lock the tenant's admins out of fixing its own rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, NamedTuple, get_args

from tenancy.enums import PolicyEffect, Role

MAX_TENANT_RULES = 200
ROLES = frozenset(role.value for role in Role)
EFFECTS = frozenset(effect.value for effect in PolicyEffect)
PolicyAction = Literal["read", "write", "delete", "export", "*"]
ACTIONS: tuple[str, ...] = get_args(PolicyAction)
TENANT_OBJECTS = (
    "identity",
    "persona_profile",
    "relationship_memory",
    "relationship_memory:private",
    "global_user_profile",
    "global_user_profile:aggregate",
    "audit",
    "knowledge",
)
ADMIN_OBJECTS = ("api_key", "policy", "tenant_settings")


class PolicyRule(NamedTuple):
    """One ``p`` line of the casbin model: role, object, action, effect."""

    role: str
    object: str
    action: str
    effect: str

    def line(self) -> str:
        return "p, " + ", ".join(self)


def refusal(rule: PolicyRule) -> tuple[str, str] | None:
    """``(field, reason)`` if a tenant may not hold ``rule``, else None."""
    if rule.role not in ROLES:
        return "role", f"unknown role {rule.role!r}"
    if rule.object in ADMIN_OBJECTS:
        return "object", (
            f"{rule.object!r} is administrative: only the versioned file policy "
            "may grant or deny it"
        )
    if rule.object not in TENANT_OBJECTS:
        return "object", (
            f"unknown object {rule.object!r}; tenant rules may name {', '.join(TENANT_OBJECTS)}"
        )
    if rule.action not in ACTIONS:
        return "action", f"unknown action {rule.action!r}; use one of {', '.join(ACTIONS)}"
    if rule.effect not in EFFECTS:
        return "effect", f"unknown effect {rule.effect!r}; use allow or deny"
    return None


def normalised(rules: Iterable[PolicyRule]) -> tuple[PolicyRule, ...]:
    """The rules as a set, in a stable order (so two rule sets compare equal)."""
    return tuple(sorted(set(rules)))
