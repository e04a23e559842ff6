"""API shapes of a tenant's privacy patterns."""

from __future__ import annotations

from typing import Annotated

import msgspec

Tag = Annotated[str, msgspec.Meta(pattern=r"^[A-Z][A-Z0-9_]{0,31}$")]
Pattern = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]


class PrivacyPattern(msgspec.Struct, forbid_unknown_fields=True):
    tag: Tag
    pattern: Pattern


class PrivacyPatterns(msgspec.Struct, forbid_unknown_fields=True):
    patterns: Annotated[list[PrivacyPattern], msgspec.Meta(max_length=50)]
