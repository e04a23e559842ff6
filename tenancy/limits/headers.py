"""The RateLimit-Policy and RateLimit response fields (IETF draft
draft-ietf-httpapi-ratelimit-headers, structured-field lists): each policy is named,
with its quota ``q`` and window ``w`` (seconds); each current state with what remains
``r`` and the seconds ``t`` until the window resets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

POLICY_HEADER = "RateLimit-Policy"
STATE_HEADER = "RateLimit"


@dataclass(frozen=True, slots=True)
class Window:
    """One limit as a client sees it on one response."""

    policy: str  # "key", "tenant", "turns", ...
    quota: int
    window_seconds: int | None  # none: a quota of what is stored, not of a period
    remaining: int
    reset_seconds: int


def rate_limit_headers(windows: Sequence[Window]) -> dict[str, str]:
    if not windows:
        return {}
    policies = ", ".join(
        f'"{w.policy}";q={w.quota}' + ("" if w.window_seconds is None else f";w={w.window_seconds}")
        for w in windows
    )
    states = ", ".join(
        f'"{w.policy}";r={max(0, w.remaining)};t={max(0, w.reset_seconds)}' for w in windows
    )
    return {POLICY_HEADER: policies, STATE_HEADER: states}
