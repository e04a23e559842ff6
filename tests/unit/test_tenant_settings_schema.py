"""The settings document's vocabularies match the content plane's, and stored documents
of an older shape (a section missing) read as the defaults."""

from __future__ import annotations

import typing

from tenancy.settings.schemas import (
    LayerName,
    MemoryTypeDays,
    MemoryTypeName,
    TenantSettingsDocument,
    newer_sections,
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


def test_a_document_stored_before_the_context_sections_reads_as_the_deployments() -> None:
    from tether.context.services import section_caps
    from tether.core.settings import ContextSettings

    stored = parse_document({"retention": {}, "ownership": {}})  # written before 0070
    assert stored.context.default_max_tokens is None
    assert stored.knowledge.query_timeout_ms is None
    assert (stored.extraction.llm_enabled, stored.extraction.llm_daily_calls) == (True, None)
    budgets = ContextSettings()
    assert section_caps(budgets, stored.context) == {
        "last_time": 300,
        "rules": 300,
        "profile": 400,
        "memory": 800,
        "knowledge": 1600,
        "recent": 600,
    }
    own = parse_document({"context": {"section_tokens": {"memory": 0, "recent": 100}}})
    caps = section_caps(budgets, own.context)
    assert (caps["memory"], caps["recent"], caps["knowledge"]) == (0, 100, 1600)


def test_a_section_a_newer_release_wrote_is_skipped_on_read_and_kept_on_write() -> None:
    """During a rolling upgrade the older pods read documents the newer ones wrote."""
    stored = {"retention": {"raw_turns_days": 7}, "dreams": {"lucid": True}}
    assert parse_document(stored).retention.raw_turns_days == 7
    assert newer_sections(stored) == {"dreams": {"lucid": True}}
    assert newer_sections({"retention": {}}) == {}
