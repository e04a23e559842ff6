"""Controlled vocabularies of the identity plane."""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    ADMIN = "admin"
    GATEWAY = "gateway"
    CREATOR = "creator"
    OPERATOR = "operator"
    COMPLIANCE = "compliance"


class PolicyEffect(StrEnum):
    """What a policy rule does when it matches (a deny always wins over an allow)."""

    ALLOW = "allow"
    DENY = "deny"


class OperatorKind(StrEnum):
    """Who currently speaks for the persona in a relationship."""

    CREATOR = "creator"
    POOL = "pool"


class PrivacyMode(StrEnum):
    NORMAL = "normal"
    RAW_ONLY = "raw_only"  # turns are kept, no memories are extracted
    OFF = "off"  # turns are accepted and dropped
