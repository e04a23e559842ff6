"""The casbin enforcer: role × object × action, loaded once from ``policies/``."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import casbin

DEFAULT_POLICY_DIR = Path(__file__).resolve().parents[2] / "policies"


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    matched_rule: tuple[str, ...] | None


class PolicyEnforcer:
    """Answers "may this role do that?"; decisions are cached (the policy is static)."""

    def __init__(self, policy_dir: Path = DEFAULT_POLICY_DIR) -> None:
        self._enforcer = casbin.Enforcer(
            str(policy_dir / "model.conf"), str(policy_dir / "policy.csv")
        )
        self.decide = lru_cache(maxsize=4096)(self._decide)

    def _decide(self, role: str, obj: str, action: str) -> Decision:
        allowed, explanation = self._enforcer.enforce_ex(role, obj, action)
        return Decision(bool(allowed), tuple(explanation) if explanation else None)
