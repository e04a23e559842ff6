"""API shapes of a tenant's privacy patterns."""

from __future__ import annotations

from typing import Annotated

import msgspec

from tether.core.text import items, text

Tag = Annotated[str, msgspec.Meta(max_length=32, pattern="^[A-Z][A-Z0-9_]{0,31}$")]
Pattern = Annotated[str, text(500, min_length=1)]


class PrivacyPattern(msgspec.Struct, forbid_unknown_fields=True):
    tag: Tag
    pattern: Pattern


class PrivacyPatterns(msgspec.Struct, forbid_unknown_fields=True):
    patterns: Annotated[list[PrivacyPattern], items(50)]
