"""Controlled vocabularies of the identity plane."""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    ADMIN = "admin"
    GATEWAY = "gateway"
    CREATOR = "creator"
    OPERATOR = "operator"
    COMPLIANCE = "compliance"


class OperatorKind(StrEnum):
    """Who currently speaks for the persona in a relationship."""

    CREATOR = "creator"
    POOL = "pool"


class PrivacyMode(StrEnum):
    NORMAL = "normal"
    RAW_ONLY = "raw_only"  # turns are kept, no memories are extracted
    OFF = "off"  # turns are accepted and dropped
