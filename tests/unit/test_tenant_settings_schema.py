"""The settings document's vocabularies match the content plane's, and stored documents
of an older shape (a section missing) read as the defaults."""

from __future__ import annotations

import typing

from tenancy.settings.schemas import (
    LayerName,
    MemoryTypeDays,
    MemoryTypeName,
    TenantSettingsDocument,
    parse_document,
)
from tether.recall.enums import MemoryLayer, MemoryType


def test_memory_types_and_layers_match_the_content_plane() -> None:
    assert set(typing.get_args(MemoryTypeName)) == {t.value for t in MemoryType}
    assert set(MemoryTypeDays.__struct_fields__) == {t.value for t in MemoryType}
    assert set(typing.get_args(LayerName)) == {layer.value for layer in MemoryLayer}


def test_a_document_without_a_section_reads_as_its_defaults() -> None:
    parsed = parse_document({"retention": {"raw_turns_days": 7}})
    assert parsed.retention.raw_turns_days == 7
    assert parsed.ownership == TenantSettingsDocument().ownership
    assert parsed.ownership.creator_silence_hours == 72
