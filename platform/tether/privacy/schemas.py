"""API shapes of a tenant's privacy settings: its own patterns, and whether knowledge-base
documents pass the filter too."""

from __future__ import annotations

from typing import Annotated

import msgspec

from tether.core.text import items, text
from tether.privacy.tenant_patterns import MAX_EXTRA_PATTERNS, MAX_PATTERN_LENGTH

Tag = Annotated[str, msgspec.Meta(max_length=32, pattern="^[A-Z][A-Z0-9_]{0,31}$")]
Pattern = Annotated[str, text(MAX_PATTERN_LENGTH, min_length=1)]


class PrivacyPattern(msgspec.Struct, forbid_unknown_fields=True):
    tag: Tag
    pattern: Pattern


class PrivacyPatterns(msgspec.Struct, forbid_unknown_fields=True):
    patterns: Annotated[list[PrivacyPattern], items(MAX_EXTRA_PATTERNS)]
    # Mask knowledge-base documents as they are indexed (off: documents are reference
    # material the tenant chose to upload, often full of names and numbers on purpose).
    filter_documents: bool = False
