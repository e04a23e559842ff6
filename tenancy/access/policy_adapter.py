"""A casbin adapter over rules already in memory: the file policy's lines, then one
tenant's own rules (read from Postgres by ``TenantPolicyRepository``, asynchronously,
before the enforcer is built; casbin's adapter interface is synchronous)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from casbin.persist import Adapter, load_policy_line

from tenancy.access.policy_rules import PolicyRule


class MergedPolicyAdapter(Adapter):  # type: ignore[misc]  # casbin ships no types
    """Loads the file policy plus ``tenant_rules`` into a model; read-only."""

    def __init__(self, file_lines: Sequence[str], tenant_rules: Sequence[PolicyRule] = ()) -> None:
        self._file_lines = tuple(file_lines)
        self._tenant_rules = tuple(tenant_rules)

    def load_policy(self, model: Any) -> None:
        for line in self._file_lines:
            load_policy_line(line, model)
        for rule in self._tenant_rules:
            load_policy_line(rule.line(), model)

    def save_policy(self, model: Any) -> bool:
        raise NotImplementedError("tenant rules are changed through PUT /v1/policies/tenant")
