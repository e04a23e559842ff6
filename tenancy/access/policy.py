"""The casbin enforcer: role × object × action, from the versioned files in ``policies/``
(read once, at start) plus, for a tenant that has them, the tenant's own rules."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

import casbin

from tenancy.access.policy_adapter import MergedPolicyAdapter
from tenancy.access.policy_rules import PolicyRule

DEFAULT_POLICY_DIR = Path(__file__).resolve().parents[2] / "policies"

RuleSource = Literal["file", "tenant"]


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    matched_rule: tuple[str, ...] | None
    # Where the matched rule comes from: the versioned files or the tenant's own rules.
    source: RuleSource | None = None


@dataclass(frozen=True, slots=True)
class FilePolicy:
    """The versioned files, read once: later edits on disk need a restart."""

    model_text: str
    lines: tuple[str, ...]

    @classmethod
    def read(cls, policy_dir: Path) -> FilePolicy:
        policy = (policy_dir / "policy.csv").read_text(encoding="utf-8")
        return cls(
            (policy_dir / "model.conf").read_text(encoding="utf-8"), tuple(policy.splitlines())
        )


class PolicyEnforcer:
    """Answers "may this role do that?"; decisions are cached (an enforcer's rules never
    change: a tenant whose rules changed gets a new enforcer)."""

    _file_rules: frozenset[tuple[str, ...]]

    def __init__(self, policy_dir: Path = DEFAULT_POLICY_DIR) -> None:
        self._setup(FilePolicy.read(policy_dir), (), None)

    def with_tenant_rules(self, rules: Sequence[PolicyRule]) -> PolicyEnforcer:
        """An enforcer of the file policy plus ``rules``. A deny still beats any allow,
        so a tenant rule can never lift a file deny."""
        merged = PolicyEnforcer.__new__(PolicyEnforcer)
        merged._setup(self._files, rules, self)
        return merged

    @property
    def file_rules(self) -> list[tuple[str, str, str, str]]:
        """The file policy's ``p`` rules (role, object, action, effect), in file order."""
        rules = []
        for line in self._files.lines:
            parts = [part.strip() for part in line.split(",")]
            if len(parts) == 5 and parts[0] == "p":
                rules.append((parts[1], parts[2], parts[3], parts[4]))
        return rules

    @property
    def tenant_rules(self) -> tuple[PolicyRule, ...]:
        return self._tenant_rules

    def _setup(
        self, files: FilePolicy, rules: Sequence[PolicyRule], base: PolicyEnforcer | None
    ) -> None:
        self._files = files
        self._base = base
        self._file_rules = base._file_rules if base else _rules_of(self._build(files, ()))
        # A rule the file already has stays a file rule.
        self._tenant_rules = tuple(r for r in rules if tuple(r) not in self._file_rules)
        self._enforcer = self._build(files, self._tenant_rules)
        self.decide = lru_cache(maxsize=1024 if base else 4096)(self._decide)

    @staticmethod
    def _build(files: FilePolicy, tenant_rules: Sequence[PolicyRule]) -> casbin.Enforcer:
        model = casbin.Enforcer.new_model(text=files.model_text)
        return casbin.Enforcer(model, MergedPolicyAdapter(files.lines, tenant_rules))

    def _decide(self, role: str, obj: str, action: str) -> Decision:
        allowed, explanation = self._enforcer.enforce_ex(role, obj, action)
        if allowed and self._base is not None:
            # Credit the file when it alone allows: "tenant" means the tenant's rule
            # made the difference.
            base = self._base.decide(role, obj, action)
            if base.allowed:
                return base
        rule = tuple(explanation) if explanation else None
        return Decision(bool(allowed), rule, self._source(rule))

    def _source(self, rule: tuple[str, ...] | None) -> RuleSource | None:
        if rule is None:
            return None
        return "file" if rule in self._file_rules else "tenant"


def _rules_of(enforcer: casbin.Enforcer) -> frozenset[tuple[str, ...]]:
    return frozenset(tuple(rule) for rule in enforcer.get_policy())
