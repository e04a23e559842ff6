"""What kind of memory a row holds, and in which layer: the vocabularies recall filters
on (``types``, ``layers``) and that a memory's ``query_row`` encodes as codes."""

from __future__ import annotations

from enum import StrEnum


class MemoryType(StrEnum):
    PROFILE = "profile"
    PREFERENCE = "preference"
    FACT = "fact"
    EVENT = "event"
    COMMITMENT = "commitment"
    EMOTION = "emotion"
    INSTRUCTION = "instruction"
    SUMMARY = "summary"


class MemoryLayer(StrEnum):
    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
